/* test_pool3d.c: float32 MaxPool3D and AvgPool3D forward over NDHWC and NCDHW, which the CPU
 * plugin runs on its own loops (plugins/cpu/cpu_pool3d_fast.c), bit for bit against a scalar
 * reference written here the generic kernel's way (plugins/cpu/cpu_conv_nd.c pool3d_range): per
 * output element its window clipped to the input, taken in depth, row, column order in double;
 * the max by (v > acc || isnan(v)) && !isnan(acc) from -inf, the average summed from 0 and
 * divided by the in-bounds count; stored as float. The same test runs again with
 * WEFT_CPU_POOL3D_FAST=0 (tests/meson.build), so the generic kernel meets the same reference.
 * Shapes: both layouts, channels 1, 2, 3, 16, 33, SAME and VALID, strides 1 to 3, windows 1 to 4
 * (past the input under SAME), batches 1 to 17 and 64 (many images of few channels pool as
 * lanes of one volume), shapes that take each of the kernel's ways (a
 * padded volume, rows of few or of many channels, rows past a chunk), a few larger ones that
 * the 2-thread run splits; values in [-1, 1), few-valued (ties, +0 / -0), and with NaN (quiet
 * and signalling), +inf and -inf. Each case runs at 1 and 2 intra-op threads. */
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

typedef struct p3_case {
  int64_t n, in[3], c, k[3], s[3];
  bool same, cfirst;
} p3_case_t;

/* TensorFlow's output size and padding before. */
static void geom(int64_t in, int64_t k, int64_t s, bool same, int64_t *out, int64_t *before) {
  if (same) {
    *out = (in + s - 1) / s;
    int64_t t = (*out - 1) * s + k - in;
    *before = t > 0 ? t / 2 : 0;
  } else {
    *out = (in - k + s) / s;
    *before = 0;
  }
}

static uint32_t rng_next(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* Reproducible values: kind 0 in [-1, 1), 1 ties (-1, -0, +0, 1), 2 with NaN and infinities. */
static weft_tensor_t *values(const int64_t *dims, uint32_t seed, int kind) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 5, dims);
  float *p = weft_tensor_data(t);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
    uint32_t r = rng_next(&s);
    static const float ties[4] = {-1.0f, -0.0f, 0.0f, 1.0f};
    p[k] = kind == 1 ? ties[r % 4] : -1 + 2 * (float)r / (float)(1u << 24);
    if (kind == 2) {
      if (r % 13 == 0) p[k] = NAN;
      if (r % 17 == 1) p[k] = -INFINITY;
      if (r % 19 == 2) p[k] = INFINITY;
      if (r % 23 == 3) p[k] = -NAN;
      if (r % 31 == 4) {
        uint32_t snan = 0x7fa00001u + (r & 0xff); /* a signalling NaN with a payload */
        memcpy(&p[k], &snan, 4);
      }
    }
  }
  return t;
}

/* The generic kernel's arithmetic. */
static void reference(const p3_case_t *c, bool is_max, const float *x, float *y,
                      const int64_t *out, const int64_t *pb) {
  int64_t ip = c->in[0] * c->in[1] * c->in[2], op = out[0] * out[1] * out[2];
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t p = 0; p < op; p++) {
      int64_t o[3] = {p / (out[1] * out[2]), p / out[2] % out[1], p % out[2]};
      int64_t lo[3], hi[3];
      for (int i = 0; i < 3; i++) {
        lo[i] = o[i] * c->s[i] - pb[i];
        hi[i] = lo[i] + c->k[i];
        lo[i] = MAX(lo[i], 0);
        hi[i] = MIN(hi[i], c->in[i]);
      }
      for (int64_t ch = 0; ch < c->c; ch++) {
        double acc = is_max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t a = lo[0]; a < hi[0]; a++)
          for (int64_t b = lo[1]; b < hi[1]; b++)
            for (int64_t q = lo[2]; q < hi[2]; q++) {
              int64_t pix = (a * c->in[1] + b) * c->in[2] + q;
              double v = x[c->cfirst ? (n * c->c + ch) * ip + pix : (n * ip + pix) * c->c + ch];
              if (is_max)
                acc = (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
              else
                acc += v;
              count++;
            }
        if (!is_max) acc /= (double)(count ? count : 1);
        y[c->cfirst ? (n * c->c + ch) * op + p : (n * op + p) * c->c + ch] = (float)acc;
      }
    }
}

static weft_tensor_t *run(const char *op, const p3_case_t *c, weft_tensor_t *x, int threads) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  weft_output_t xk = weft_const(g, "x", x, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, op, "op");
  weft_op_add_input(b, xk);
  int64_t k[5] = {1, 1, 1, 1, 1}, s[5] = {1, 1, 1, 1, 1};
  for (int i = 0; i < 3; i++) {
    k[(c->cfirst ? 2 : 1) + i] = c->k[i];
    s[(c->cfirst ? 2 : 1) + i] = c->s[i];
  }
  weft_op_set_attr_int_list(b, "ksize", k, 5);
  weft_op_set_attr_int_list(b, "strides", s, 5);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_string(b, "padding", c->same ? "SAME" : "VALID");
  weft_op_set_attr_string(b, "data_format", c->cfirst ? "NCDHW" : "NDHWC");
  weft_node_t *node = NULL;
  OK(weft_op_finish(b, &node));
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_intra_op_threads(opts, threads);
  weft_session_t *sess = weft_session_new(g, opts, &st);
  OK(st);
  weft_session_options_free(opts);
  const char *fetch = "op";
  weft_tensor_t *y = NULL;
  OK(weft_session_run(sess, NULL, NULL, 0, &fetch, &y, 1, NULL, 0));
  weft_session_free(sess);
  weft_graph_free(g);
  return y;
}

/* Bit-for-bit equality; the average's NaNs match any NaN (which NaN an addition of two returns
 * follows the operand order the compiler picks for a commutative add), the max's must be the
 * same NaN (it picks one of the inputs). */
static void check(const weft_tensor_t *got, const float *want, int64_t count, bool is_max,
                  const char *what) {
  g_assert_cmpint(weft_tensor_num_elements(got), ==, count);
  const float *p = weft_tensor_data((weft_tensor_t *)got);
  for (int64_t i = 0; i < count; i++) {
    uint32_t a, b;
    memcpy(&a, &p[i], 4);
    memcpy(&b, &want[i], 4);
    if (a != b && (is_max || !(isnan(p[i]) && isnan(want[i]))))
      g_error("%s: element %" G_GINT64_FORMAT " is %.9g (0x%08x), expected %.9g (0x%08x)", what,
              i, (double)p[i], a, (double)want[i], b);
  }
}

static void run_case(const p3_case_t *c, size_t i) {
  static const char *const ops[] = {"MaxPool3D", "AvgPool3D"};
  int64_t out[3], pb[3];
  for (int d = 0; d < 3; d++) geom(c->in[d], c->k[d], c->s[d], c->same, &out[d], &pb[d]);
  int64_t xd[5], yd[5];
  xd[0] = yd[0] = c->n;
  xd[c->cfirst ? 1 : 4] = yd[c->cfirst ? 1 : 4] = c->c;
  for (int d = 0; d < 3; d++) {
    xd[(c->cfirst ? 2 : 1) + d] = c->in[d];
    yd[(c->cfirst ? 2 : 1) + d] = out[d];
  }
  int64_t count = c->n * c->c * out[0] * out[1] * out[2];
  float *want = g_new(float, count + 1);
  for (int kind = 0; kind < 3; kind++) {
    weft_tensor_t *x = values(xd, (uint32_t)(7 * i + (size_t)kind), kind);
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
      reference(c, o == 0, weft_tensor_data(x), want, out, pb);
      for (int threads = 1; threads <= 2; threads++) {
        weft_tensor_t *y = run(ops[o], c, x, threads);
        char *what = g_strdup_printf(
            "%s case %zu [n %" G_GINT64_FORMAT " in %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
            "x%" G_GINT64_FORMAT " c %" G_GINT64_FORMAT " k %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
            "x%" G_GINT64_FORMAT " s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
            " %s %s] values %d threads %d",
            ops[o], i, c->n, c->in[0], c->in[1], c->in[2], c->c, c->k[0], c->k[1], c->k[2],
            c->s[0], c->s[1], c->s[2], c->same ? "SAME" : "VALID", c->cfirst ? "NCDHW" : "NDHWC",
            kind, threads);
        check(y, want, count, o == 0, what);
        g_free(what);
        weft_tensor_unref(y);
      }
    }
    weft_tensor_unref(x);
  }
  g_free(want);
}

/* Hand-picked shapes, then a reproducible sweep. */
static const p3_case_t fixed[] = {
    {1, {5, 5, 5}, 2, {2, 2, 2}, {1, 1, 1}, true, false},   /* the corpus models' shapes */
    {1, {5, 5, 5}, 2, {2, 2, 2}, {1, 1, 1}, true, true},
    {64, {5, 5, 5}, 2, {2, 2, 2}, {2, 2, 2}, true, false}, /* and at batch 64: lanes of */
    {64, {5, 5, 5}, 2, {2, 2, 2}, {2, 2, 2}, true, true},  /* (image, channel) pairs */
    {2, {5, 5, 5}, 2, {2, 2, 2}, {2, 2, 2}, false, true},
    {3, {3, 2, 4}, 3, {4, 4, 4}, {1, 1, 1}, true, false},   /* windows past the input */
    {2, {2, 3, 2}, 1, {4, 3, 4}, {3, 2, 1}, true, true},
    {1, {4, 5, 6}, 16, {1, 1, 1}, {1, 1, 1}, false, false}, /* window 1: a copy */
    {2, {6, 7, 8}, 33, {3, 2, 3}, {2, 3, 1}, true, false},
    {2, {6, 7, 8}, 33, {3, 2, 3}, {2, 3, 1}, true, true},
    {1, {3, 4, 5}, 3, {3, 4, 5}, {1, 1, 1}, false, false}, /* global */
    {1, {3, 4, 700}, 2, {1, 2, 3}, {1, 1, 1}, true, false},  /* rows past one chunk */
    {1, {2, 3, 9}, 600, {2, 2, 3}, {1, 2, 2}, true, false},  /* channels past one chunk */
    {1, {2, 2, 1100}, 1, {2, 2, 4}, {1, 1, 3}, true, true},
    /* The rows way (no padded copy): strides past the padded way's, or volumes past its
     * 64 Ki floats; a row past one chunk, few and many channels, a remainder block. */
    {1, {2, 7, 1500}, 3, {1, 2, 3}, {1, 3, 2}, true, false},
    {1, {2, 5, 1200}, 1, {2, 2, 3}, {1, 3, 2}, true, true},
    {1, {12, 24, 24}, 8, {3, 3, 3}, {1, 1, 1}, true, false},
    {1, {40, 40, 50}, 1, {2, 2, 2}, {1, 1, 1}, true, true},
    {2, {8, 16, 16}, 24, {3, 3, 3}, {1, 1, 1}, true, false},
    {1, {5, 6, 7}, 40, {4, 4, 4}, {2, 3, 3}, true, false},
    {4, {10, 12, 12}, 16, {3, 3, 3}, {1, 1, 1}, true, false}, /* enough work to split */
    {3, {10, 12, 12}, 8, {2, 2, 2}, {2, 2, 2}, true, true},
};

static void test_fixed(void) {
  for (size_t i = 0; i < G_N_ELEMENTS(fixed); i++) run_case(&fixed[i], i);
}

static void test_sweep(void) {
  static const int64_t chans[] = {1, 2, 3, 16, 33};
  uint32_t s = 2026;
  for (size_t i = 0; i < 160; i++) {
    p3_case_t c;
    static const int64_t batches[] = {1, 2, 3, 8, 17};
    c.n = batches[rng_next(&s) % 5];
    c.c = chans[rng_next(&s) % 5];
    c.cfirst = i % 2;
    c.same = (i / 2) % 2;
    for (int d = 0; d < 3; d++) {
      c.in[d] = 1 + rng_next(&s) % 7;
      c.k[d] = 1 + rng_next(&s) % 4;
      c.s[d] = 1 + rng_next(&s) % 3;
      if (!c.same && c.k[d] > c.in[d]) c.k[d] = c.in[d]; /* VALID needs the window inside */
    }
    run_case(&c, 100 + i);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/pool3d/fixed", test_fixed);
  g_test_add_func("/pool3d/sweep", test_sweep);
  return g_test_run();
}
