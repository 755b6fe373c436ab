/* test_packed_gemm.c: the float32 GEMM over a constant B packed once (plugins/cpu/cpu_gemm.h,
 * cpu_packed.c). First every micro-kernel level this CPU runs (baseline, AVX2, AVX-512), called
 * directly over every shape class (M, N, K tails around the 8 x 32 tile and the passes' depth,
 * M = 1, N = 1, K = 1, A stored transposed, B stored transposed, a bias, a block of a larger C,
 * column blocks) against a double reference, and the implicit GEMM's passes over segments of
 * rows where they lie (weft__cpu_gemm_packed_passes). Then through sessions (the plugin's MatMul
 * and _FusedMatMul with WEFT_CPU_PACKED_GEMM=1, so every shape takes the packed path): Const and
 * Identity-of-Const weights, transpose_a/b, bias and Relu, two intra-op threads splitting rows
 * and columns, one session run many times (the cached pack), Conv2D's constant filters (3x3
 * through im2col tiles, 1x1 as it is, deeper filter rows through the implicit GEMM with strides,
 * VALID and dilated rows; with and without bias and Relu), and weights that are not
 * constant
 * (a variable assigned between steps, a fed placeholder), whose new values must be used. */
#include <glib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"
#include "weft/weft.h"

#define OK(st)                                                 \
  do {                                                         \
    weft_status_t *st_ = (st);                                 \
    if (st_) g_error("%s: %s", #st, weft_status_message(st_)); \
  } while (0)

static void fill(float *p, int64_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < n; k++) {
    s = s * 1664525u + 1013904223u;
    p[k] = -1.0f + 2.0f * (float)(s >> 8) / (float)(1u << 24);
  }
}

/* C[i, j] against sum_p op(A)[i, p] op(B)[p, j] (+ bias[j]) in double: within 1e-5 of the sum
 * of the terms' magnitudes (float rounding over k terms), else the test fails naming the
 * element. */
static void check(const char *what, const float *c, int64_t ldc, int64_t m, int64_t n,
                  int64_t k, const float *a, int64_t lda, bool ta, const float *b, int64_t ldb,
                  bool tb, const float *bias) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = bias ? bias[j] : 0.0, mag = bias ? fabs(bias[j]) : 0.0;
      for (int64_t p = 0; p < k; p++) {
        double x = ta ? a[p * lda + i] : a[i * lda + p];
        double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += x * y;
        mag += fabs(x * y);
      }
      double got = c[i * ldc + j];
      if (!(fabs(got - s) <= 1e-5 * mag + 1e-30))
        g_error("%s: C[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] = %.9g, expected %.9g", what,
                i, j, got, s);
    }
}

typedef struct shape {
  int64_t m, k, n;
} shape_t;

static const shape_t shapes[] = {
    {1, 1, 1},    {1, 17, 1},   {1, 300, 70}, {7, 1, 33},    {8, 32, 32},   {9, 3, 31},
    {15, 257, 64}, {17, 513, 1}, {16, 600, 65}, {64, 784, 256}, {33, 256, 10}, {130, 70, 97},
    /* More than one pass over the depth (WEFT_GEMM_KC), with tails. */
    {9, 1100, 40}, {20, 2100, 33},
};

static void test_levels(void) {
  for (int isa = 0; isa < WEFT_CPU_ISA_COUNT; isa++) {
    if (!weft__cpu_isa_supported((weft_cpu_isa_t)isa)) {
      g_test_message("%s: not supported here", weft__cpu_isa_name((weft_cpu_isa_t)isa));
      continue;
    }
    weft_cpu_gemm_tile_fn tile = weft__cpu_gemm_tile_for((weft_cpu_isa_t)isa);
    for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
      for (int variant = 0; variant < 4; variant++) {
        bool ta = variant & 1, tb = variant & 2;
        int64_t m = shapes[s].m, k = shapes[s].k, n = shapes[s].n;
        /* Row strides wider than the rows, and C a block of a wider matrix. */
        int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 7;
        float *a = g_new(float, (ta ? k : m) * lda), *b = g_new(float, (tb ? n : k) * ldb);
        float *bias = g_new(float, n), *c = g_new(float, m * ldc);
        fill(a, (ta ? k : m) * lda, (uint32_t)(s * 8 + variant));
        fill(b, (tb ? n : k) * ldb, (uint32_t)(s * 8 + variant + 100));
        fill(bias, n, (uint32_t)s + 200);
        float *bp = aligned_alloc(64, (weft__cpu_gemm_packed_floats(k, n) * 4 + 63) / 64 * 64);
        weft__cpu_gemm_pack_b(b, ldb, tb, k, n, bp);
        char *what = g_strdup_printf("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                                     "x%" G_GINT64_FORMAT " ta=%d tb=%d",
                                     weft__cpu_isa_name((weft_cpu_isa_t)isa), m, k, n, ta, tb);
        weft_cpu_gemm_job_t job = {.m = m, .n = n, .k = k, .a = a, .lda = lda, .ta = ta,
                                   .bp = bp, .c = c, .ldc = ldc, .tile = tile};
        /* Whole, then with a bias in two column blocks (the second from panel 1 on) and two
         * row blocks, as threads cut it. */
        for (int64_t q = 0; q < m * ldc; q++) c[q] = NAN;
        weft__cpu_gemm_packed_block(&job, 0, m, 0, n);
        check(what, c, ldc, m, n, k, a, lda, ta, b, ldb, tb, NULL);
        job.bias = bias;
        for (int64_t q = 0; q < m * ldc; q++) c[q] = NAN;
        int64_t cut = n > WEFT_GEMM_NR ? WEFT_GEMM_NR : n, rcut = m / 2;
        weft__cpu_gemm_packed_block(&job, 0, rcut, 0, cut);
        weft__cpu_gemm_packed_block(&job, rcut, m, 0, cut);
        weft__cpu_gemm_packed_block(&job, 0, m, cut, n);
        check(what, c, ldc, m, n, k, a, lda, ta, b, ldb, tb, bias);
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = n; j < ldc; j++)
            if (!isnan(c[i * ldc + j])) g_error("%s: wrote past the block at row %d", what, (int)i);
        /* Clamped in the tile (Relu, or Relu6 on odd shapes; deep sums pass 6): the bits of the
         * unclamped sums clamped after. */
        job.clamp = s % 2 ? WEFT_GEMM_RELU6 : WEFT_GEMM_RELU;
        float *plain = g_memdup2(c, sizeof(float) * (size_t)(m * ldc));
        weft__cpu_gemm_clamp(plain, ldc, (int)m, (int)n, job.clamp);
        weft__cpu_gemm_packed_block(&job, 0, m, 0, n);
        if (memcmp(plain, c, sizeof(float) * (size_t)(m * ldc)) != 0)
          g_error("%s: clamp %d in the tile differs from after it", what, job.clamp);
        g_free(plain);
        g_free(what);
        free(bp);
        g_free(a);
        g_free(b);
        g_free(bias);
        g_free(c);
      }
    }
  }
}

/* The implicit GEMM (weft__cpu_gemm_packed_passes) at every level: three segments whose rows
 * overlap (row stride 5 floats, passes 20, 37 and 9 deep), some passes left out, a bias, C a
 * block of a wider matrix, and a finish that must run once on each segment. */
static void negate_block(void *arg, float *c, int64_t rows, int64_t cols, int64_t ldc,
                         int64_t col0) {
  int *calls = arg;
  (*calls)++;
  g_assert_cmpint(col0, ==, 0);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) c[i * ldc + j] = -c[i * ldc + j];
}

static void test_levels_passes(void) {
  enum { NP = 3, NS = 3, RS = 5 };
  const int64_t k0[NP] = {0, 20, 57}, kc[NP] = {20, 37, 9}, k = 66, n = 45, ldc = n + 3;
  const int64_t rows[NS] = {11, 3, 8};
  const bool left_out[NS][NP] = {{false, false, false}, {true, false, false}, {true, false, true}};
  float *x = g_new(float, 200), *b = g_new(float, k * n), *bias = g_new(float, n);
  fill(x, 200, 301);
  fill(b, k * n, 302);
  fill(bias, n, 303);
  float *bp = aligned_alloc(64, (weft__cpu_gemm_packed_floats(k, n) * 4 + 63) / 64 * 64);
  weft__cpu_gemm_pack_b(b, n, false, k, n, bp);
  for (int isa = 0; isa < WEFT_CPU_ISA_COUNT; isa++) {
    if (!weft__cpu_isa_supported((weft_cpu_isa_t)isa)) continue;
    float *c = g_new(float, 22 * ldc);
    for (int64_t q = 0; q < 22 * ldc; q++) c[q] = NAN;
    const float *ptrs[NS][NP];
    weft_cpu_gemm_segment_t seg[NS];
    for (int s = 0, row = 0; s < NS; row += (int)rows[s], s++) {
      for (int q = 0; q < NP; q++) ptrs[s][q] = left_out[s][q] ? NULL : x + s * 7 + q * 3;
      seg[s] = (weft_cpu_gemm_segment_t){rows[s], c + row * ldc, ptrs[s]};
    }
    int calls = 0;
    weft_cpu_gemm_job_t job = {.n = n, .k = k, .bp = bp, .ldc = ldc, .bias = bias,
                               .finish = negate_block, .finish_arg = &calls,
                               .tile = weft__cpu_gemm_tile_for((weft_cpu_isa_t)isa)};
    weft__cpu_gemm_packed_passes(&job, k0, kc, NP, RS, seg, NS);
    g_assert_cmpint(calls, ==, NS);
    for (int s = 0, row = 0; s < NS; row += (int)rows[s], s++)
      for (int64_t i = 0; i < rows[s]; i++)
        for (int64_t j = 0; j < ldc; j++) {
          double want = bias[j % n], mag = fabs(want);
          for (int q = 0; q < NP; q++)
            for (int64_t p = 0; !left_out[s][q] && p < kc[q]; p++) {
              double t = (double)ptrs[s][q][i * RS + p] * b[(k0[q] + p) * n + j % n];
              want += t;
              mag += fabs(t);
            }
          float got = c[(row + i) * ldc + j];
          if (j >= n ? !isnan(got) : !(fabs(-got - want) <= 1e-5 * mag + 1e-30))
            g_error("%s passes: segment %d C[%d,%d] = %.9g, expected %.9g",
                    weft__cpu_isa_name((weft_cpu_isa_t)isa), s, (int)i, (int)j, got, -want);
        }
    g_free(c);
  }
  free(bp);
  g_free(x);
  g_free(b);
  g_free(bias);
}

/* ---------------------------------------------------------------------------------------------
 * Through sessions. */

static weft_output_t constant(weft_graph_t *g, const char *name, int64_t rows, int64_t cols,
                              uint32_t seed, float **copy) {
  int64_t dims[2] = {rows, cols};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rows ? 2 : 1, rows ? dims : &dims[1]);
  fill(weft_tensor_data(t), weft_tensor_num_elements(t), seed);
  *copy = g_memdup2(weft_tensor_data(t), sizeof(float) * (size_t)weft_tensor_num_elements(t));
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static weft_session_t *session(weft_graph_t *g, int threads) {
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_intra_op_threads(o, threads);
  weft_session_options_set_use_per_session_threads(o, true);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  weft_session_options_free(o);
  return s;
}

static weft_tensor_t *fetch(weft_session_t *s, const char *name, const char *feed_name,
                            weft_tensor_t *feed) {
  weft_tensor_t *out = NULL;
  const char *fetches[1] = {name};
  OK(weft_session_run(s, feed ? (const char *[]){feed_name} : NULL,
                      feed ? (weft_tensor_t *const[]){feed} : NULL, feed ? 1 : 0, fetches, &out,
                      1, NULL, 0));
  return out;
}

/* MatMul of constants (B through an Identity, as TensorFlow's frozen graphs read weights), and
 * MatMul + BiasAdd + Relu (fused into _FusedMatMul at plan time), at 1 and 2 threads, each run
 * three times in one session (the pack is made on the first and reused). */
static void test_session_constants(void) {
  static const shape_t cases[] = {{1, 784, 256}, {5, 3, 1}, {64, 784, 256}, {257, 130, 520},
                                  {64, 256, 10}, {2048, 64, 64}};
  for (size_t s = 0; s < G_N_ELEMENTS(cases); s++)
    for (int variant = 0; variant < 4; variant++) {
      bool ta = variant & 1, tb = variant & 2;
      int64_t m = cases[s].m, k = cases[s].k, n = cases[s].n;
      weft_graph_t *g = weft_graph_new();
      weft_status_t *st = NULL;
      float *a = NULL, *b = NULL, *bias = NULL;
      weft_output_t ao = constant(g, "a", ta ? k : m, ta ? m : k, (uint32_t)s, &a);
      weft_output_t bo = constant(g, "w", tb ? n : k, tb ? k : n, (uint32_t)s + 50, &b);
      weft_output_t co = constant(g, "bias", 0, n, (uint32_t)s + 90, &bias);
      bo = weft_unary(g, "Identity", "w/read", bo, &st);
      weft_matmul(g, "mm", ao, bo, ta, tb, &st);
      weft_output_t f = weft_matmul(g, "mm2", ao, bo, ta, tb, &st);
      f = weft_binary(g, "BiasAdd", "biased", f, co, &st);
      weft_unary(g, "Relu", "relu", f, &st);
      OK(st);
      for (int threads = 1; threads <= 2; threads++) {
        weft_session_t *sess = session(g, threads);
        for (int round = 0; round < 3; round++) {
          char *what = g_strdup_printf("MatMul %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                                       "x%" G_GINT64_FORMAT " ta=%d tb=%d threads=%d round %d",
                                       m, k, n, ta, tb, threads, round);
          weft_tensor_t *t = fetch(sess, "mm", NULL, NULL);
          check(what, weft_tensor_data(t), n, m, n, k, a, ta ? m : k, ta, b, tb ? k : n, tb,
                NULL);
          weft_tensor_unref(t);
          t = fetch(sess, "relu", NULL, NULL);
          /* The fused node against Relu of the biased sum. */
          const float *got = weft_tensor_data(t);
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
              double r = bias[j];
              for (int64_t p = 0; p < k; p++)
                r += (double)(ta ? a[p * m + i] : a[i * k + p]) *
                     (double)(tb ? b[j * k + p] : b[p * n + j]);
              double exp = r < 0 ? 0 : r;
              if (fabs(got[i * n + j] - exp) > 1e-4 * (1 + fabs(exp)))
                g_error("%s relu: [%d,%d] = %.9g, expected %.9g", what, (int)i, (int)j,
                        got[i * n + j], exp);
            }
          weft_tensor_unref(t);
          g_free(what);
        }
        weft_session_free(sess);
      }
      g_free(a);
      g_free(b);
      g_free(bias);
      weft_graph_free(g);
    }
}

/* Conv2D (and Conv2D + BiasAdd + Relu, fused into _FusedConv2D) with a constant filter, NHWC:
 * 3x3 SAME (im2col tiles) and 1x1 (the input read as it is), output channels around the
 * panel width; then filters whose rows are deep enough for the implicit GEMM (cpu_conv_fast.c:
 * no im2col but at the edges): batches, strides, VALID, dilated filter rows, rows split in
 * pieces of the pass depth, outputs too narrow for an inside pixel, tiles that end mid-row (two
 * threads). At 1 and 2 threads, twice per session; against a double reference. */
static void test_session_conv(void) {
  static const int64_t cases[][11] = {
      /* n, h, w, c, kh, kw, m, sh, sw, dh, valid */
      {1, 9, 9, 5, 3, 3, 33, 1, 1, 1, 0},    {2, 14, 14, 16, 3, 3, 64, 1, 1, 1, 0},
      {1, 16, 16, 32, 1, 1, 40, 1, 1, 1, 0}, {2, 7, 7, 3, 1, 1, 96, 1, 1, 1, 0},
      {2, 10, 13, 24, 3, 3, 40, 1, 1, 1, 0}, {1, 16, 16, 64, 3, 3, 64, 2, 2, 1, 0},
      {1, 12, 12, 32, 3, 5, 16, 1, 1, 1, 1}, {1, 9, 9, 100, 5, 3, 48, 1, 2, 1, 0},
      {2, 11, 8, 64, 3, 3, 33, 1, 1, 2, 0},  {1, 6, 4, 64, 3, 3, 8, 1, 1, 1, 0},
      {1, 3, 2, 64, 3, 3, 16, 1, 1, 1, 0},  {1, 20, 20, 64, 3, 3, 40, 1, 1, 1, 0}};
  for (size_t s = 0; s < G_N_ELEMENTS(cases); s++) {
    const int64_t *cs = cases[s];
    int64_t n = cs[0], h = cs[1], w = cs[2], c = cs[3], kh = cs[4], kw = cs[5], m = cs[6];
    int64_t sh = cs[7], sw = cs[8], dh = cs[9];
    bool valid = cs[10];
    /* TensorFlow's output size and padding before. */
    int64_t span_h = (kh - 1) * dh + 1;
    int64_t oh = valid ? (h - span_h) / sh + 1 : (h + sh - 1) / sh;
    int64_t ow = valid ? (w - kw) / sw + 1 : (w + sw - 1) / sw;
    int64_t ph = valid ? 0 : MAX((oh - 1) * sh + span_h - h, 0) / 2;
    int64_t pw = valid ? 0 : MAX((ow - 1) * sw + kw - w, 0) / 2;
    weft_graph_t *g = weft_graph_new();
    weft_status_t *st = NULL;
    int64_t xd[4] = {n, h, w, c}, fd[4] = {kh, kw, c, m};
    weft_tensor_t *xt = weft_tensor_new(WEFT_DT_FLOAT, 4, xd);
    weft_tensor_t *ft = weft_tensor_new(WEFT_DT_FLOAT, 4, fd);
    fill(weft_tensor_data(xt), weft_tensor_num_elements(xt), (uint32_t)s + 7);
    fill(weft_tensor_data(ft), weft_tensor_num_elements(ft), (uint32_t)s + 8);
    const float *x = weft_tensor_data(xt), *f = weft_tensor_data(ft);
    weft_output_t xo = weft_const(g, "x", xt, &st), fo = weft_const(g, "f", ft, &st);
    float *bias = NULL;
    weft_output_t bo = constant(g, "bias", 0, m, (uint32_t)s + 9, &bias);
    const int64_t strides[4] = {1, sh, sw, 1}, dilations[4] = {1, dh, 1, 1};
    /* conv3's filter is fed (not a constant: packed for each call, or OpenBLAS), as a tensor of
     * its own (the Const's own tensor would count as that constant). */
    weft_output_t fp = weft_placeholder(g, "fp", WEFT_DT_FLOAT, 4, fd, &st);
    weft_tensor_t *fcopy = weft_tensor_new(WEFT_DT_FLOAT, 4, fd);
    memcpy(weft_tensor_data(fcopy), f, sizeof(float) * (size_t)weft_tensor_num_elements(ft));
    const char *names[3] = {"conv", "conv2", "conv3"};
    weft_node_t *nodes[3] = {NULL, NULL, NULL};
    for (int q = 0; q < 3; q++) {
      weft_op_builder_t *b = weft_op_new(g, "Conv2D", names[q]);
      weft_op_add_input(b, xo);
      weft_op_add_input(b, q == 2 ? fp : fo);
      weft_op_set_attr_int_list(b, "strides", strides, 4);
      weft_op_set_attr_int_list(b, "dilations", dilations, 4);
      weft_op_set_attr_string(b, "padding", valid ? "VALID" : "SAME");
      OK(weft_op_finish(b, &nodes[q]));
    }
    weft_output_t v = weft_binary(g, "BiasAdd", "biased", (weft_output_t){nodes[1], 0}, bo, &st);
    weft_unary(g, "Relu", "relu", v, &st);
    OK(st);
    int64_t total = n * oh * ow * m;
    double *want = g_new0(double, total);
    for (int64_t bi = 0; bi < n; bi++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xx = 0; xx < ow; xx++)
          for (int64_t o = 0; o < m; o++) {
            double acc = 0;
            for (int64_t i = 0; i < kh; i++)
              for (int64_t j = 0; j < kw; j++) {
                int64_t iy = y * sh + i * dh - ph, ix = xx * sw + j - pw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                for (int64_t ci = 0; ci < c; ci++)
                  acc += (double)x[((bi * h + iy) * w + ix) * c + ci] *
                         (double)f[((i * kw + j) * c + ci) * m + o];
              }
            want[((bi * oh + y) * ow + xx) * m + o] = acc;
          }
    for (int threads = 1; threads <= 2; threads++) {
      weft_session_t *sess = session(g, threads);
      for (int round = 0; round < 2; round++) {
        weft_tensor_t *t = fetch(sess, "conv", NULL, NULL), *r = fetch(sess, "relu", NULL, NULL);
        weft_tensor_t *fed = fetch(sess, "conv3", "fp", fcopy);
        g_assert_cmpint(weft_tensor_num_elements(t), ==, total);
        g_assert_cmpint(weft_tensor_num_elements(fed), ==, total);
        const float *got = weft_tensor_data(t), *gr = weft_tensor_data(r);
        const float *gf = weft_tensor_data(fed);
        for (int64_t q = 0; q < total; q++) {
          double br = want[q] + bias[q % m], er = br < 0 ? 0 : br;
          if (fabs(got[q] - want[q]) > 1e-4 * (1 + fabs(want[q])) ||
              fabs(gf[q] - want[q]) > 1e-4 * (1 + fabs(want[q])) ||
              fabs(gr[q] - er) > 1e-4 * (1 + fabs(er)))
            g_error("Conv2D case %zu threads %d: element %" G_GINT64_FORMAT
                    " = %.9g / fed filter %.9g / relu %.9g, expected %.9g / %.9g",
                    s, threads, q, got[q], gf[q], gr[q], want[q], er);
        }
        weft_tensor_unref(t);
        weft_tensor_unref(r);
        weft_tensor_unref(fed);
      }
      weft_session_free(sess);
    }
    weft_tensor_unref(xt);
    weft_tensor_unref(ft);
    weft_tensor_unref(fcopy);
    g_free(want);
    g_free(bias);
    weft_graph_free(g);
  }
}

/* Weights that change between steps are never served from a stale pack: a variable assigned a
 * new value from a fed placeholder, and a placeholder fed as B directly. */
static void test_session_changing_weights(void) {
  const int64_t m = 16, k = 40, n = 64;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  float *a = NULL, *w0 = NULL;
  weft_output_t ao = constant(g, "a", m, k, 1, &a);
  weft_output_t init = constant(g, "w0", k, n, 2, &w0);
  weft_output_t v = weft_variable(g, "v", init, &st);
  int64_t wd[2] = {k, n};
  weft_output_t fed = weft_placeholder(g, "w_new", WEFT_DT_FLOAT, 2, wd, &st);
  weft_op_builder_t *bld = weft_op_new(g, "Assign", "v/set");
  weft_op_add_input(bld, weft_out(weft_graph_node(g, "v"), 0));
  weft_op_add_input(bld, fed);
  OK(st);
  OK(weft_op_finish(bld, NULL));
  weft_matmul(g, "from_var", ao, v, false, false, &st);
  weft_matmul(g, "from_feed", ao, fed, false, false, &st);
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_session_t *s = session(g, 1);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, (const char *[]){"init"}, 1));
  weft_tensor_t *t = fetch(s, "from_var", NULL, NULL);
  check("variable, first value", weft_tensor_data(t), n, m, n, k, a, k, false, w0, n, false,
        NULL);
  weft_tensor_unref(t);
  for (uint32_t round = 0; round < 3; round++) {
    weft_tensor_t *w = weft_tensor_new(WEFT_DT_FLOAT, 2, wd);
    fill(weft_tensor_data(w), k * n, 10 + round);
    OK(weft_session_run(s, (const char *[]){"w_new"}, (weft_tensor_t *const[]){w}, 1, NULL,
                        NULL, 0, (const char *[]){"v/set"}, 1));
    t = fetch(s, "from_var", NULL, NULL);
    check("variable, assigned", weft_tensor_data(t), n, m, n, k, a, k, false,
          weft_tensor_data(w), n, false, NULL);
    weft_tensor_unref(t);
    t = fetch(s, "from_feed", "w_new", w);
    check("fed weights", weft_tensor_data(t), n, m, n, k, a, k, false, weft_tensor_data(w), n,
          false, NULL);
    weft_tensor_unref(t);
    weft_tensor_unref(w);
  }
  weft_session_free(s);
  g_free(a);
  g_free(w0);
  weft_graph_free(g);
}

/* Here with WEFT_CPU_PACKED_GEMM=1, and built a second time as test_packed_gemm_default
 * (WEFT_TEST_PACKED_DEFAULT) alone, without it: there a narrow output layer (10 or 16 columns,
 * 256 and more deep) takes the packed path by default on AVX-512 (cpu_packed.c,
 * narrow_wanted). Its sums must be the same bits as the packed GEMM's called directly
 * (OpenBLAS's would not be), and near a double reference; with a bias (fused), at 1 and 2
 * threads, twice per session. */
static void test_narrow_default(void) {
  static const shape_t cases[] = {{256, 512, 10}, {43, 300, 16}, {9, 256, 10}};
  bool avx512 = weft__cpu_isa_supported(WEFT_CPU_ISA_AVX512);
  if (!avx512) g_test_message("AVX-512 not supported here: OpenBLAS runs them (no bit check)");
  for (size_t s = 0; s < G_N_ELEMENTS(cases); s++) {
    int64_t m = cases[s].m, k = cases[s].k, n = cases[s].n;
    weft_graph_t *g = weft_graph_new();
    weft_status_t *st = NULL;
    float *a = NULL, *b = NULL, *bias = NULL;
    weft_output_t ao = constant(g, "a", m, k, (uint32_t)s + 7, &a);
    weft_output_t bo = constant(g, "w", k, n, (uint32_t)s + 57, &b);
    weft_output_t co = constant(g, "bias", 0, n, (uint32_t)s + 97, &bias);
    weft_output_t f = weft_matmul(g, "mm", ao, bo, false, false, &st);
    weft_binary(g, "BiasAdd", "biased", f, co, &st);
    OK(st);
    float *bp = aligned_alloc(64, (weft__cpu_gemm_packed_floats(k, n) * 4 + 63) / 64 * 64);
    float *want = g_new(float, m * n);
    weft__cpu_gemm_pack_b(b, n, false, k, n, bp);
    weft_cpu_gemm_job_t job = {.m = m, .n = n, .k = k, .a = a, .lda = k, .bp = bp, .c = want,
                               .ldc = n, .bias = bias,
                               .tile = weft__cpu_gemm_tile_for(WEFT_CPU_ISA_AVX512)};
    if (avx512) weft__cpu_gemm_packed_block(&job, 0, m, 0, n);
    for (int threads = 1; threads <= 2; threads++) {
      weft_session_t *sess = session(g, threads);
      for (int round = 0; round < 2; round++) {
        char *what = g_strdup_printf("narrow %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                                     "x%" G_GINT64_FORMAT " threads=%d round %d",
                                     m, k, n, threads, round);
        weft_tensor_t *t = fetch(sess, "biased", NULL, NULL);
        check(what, weft_tensor_data(t), n, m, n, k, a, k, false, b, n, false, bias);
        if (avx512 && memcmp(weft_tensor_data(t), want, sizeof(float) * (size_t)(m * n)) != 0)
          g_error("%s: not the packed GEMM's bits", what);
        weft_tensor_unref(t);
        g_free(what);
      }
      weft_session_free(sess);
    }
    free(bp);
    g_free(want);
    g_free(a);
    g_free(b);
    g_free(bias);
    weft_graph_free(g);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/packed_gemm/narrow_default", test_narrow_default);
#ifdef WEFT_TEST_PACKED_DEFAULT
  return g_test_run();
#endif
  /* Every shape through the packed path (the plugin reads this once, at its first GEMM). */
  g_setenv("WEFT_CPU_PACKED_GEMM", "1", TRUE);
  g_test_add_func("/packed_gemm/levels", test_levels);
  g_test_add_func("/packed_gemm/session_constants", test_session_constants);
  g_test_add_func("/packed_gemm/levels_passes", test_levels_passes);
  g_test_add_func("/packed_gemm/session_conv", test_session_conv);
  g_test_add_func("/packed_gemm/session_changing_weights", test_session_changing_weights);
  return g_test_run();
}
