/* test_conv_direct.c: the direct few-tap convolution's row kernels (plugins/cpu/cpu_convd.h),
 * every level this CPU runs (AVX2, AVX-512) called directly against a double reference: blocks
 * of pixels with their remainders, edge pixels on both sides, strides 1-3, filter rows in the
 * padding (NULL), 16 to 144 filters (the AVX-512 loop's 64-filter chunks and 48/32/16 tails),
 * a bias, Relu and Relu6 (NaN kept, as the Relu ops keep it). The conformance suite covers the
 * same kernels through Conv2D and _FusedConv2D at the default level. */
#include <glib.h>
#include <math.h>
#include <stdint.h>

#include "cpu_convd.h"
#include "cpu_gemm.h"

#if defined(__x86_64__) || defined(__i386__)
static void fill(float *p, int64_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < n; k++) {
    s = s * 1664525u + 1013904223u;
    p[k] = -1.0f + 2.0f * (float)(s >> 8) / (float)(1u << 24);
  }
}

typedef struct geom {
  int64_t w, c, kh, kw, sw, pl, ow, m;
} geom_t;

static const geom_t geoms[] = {
    {29, 3, 3, 3, 1, 1, 29, 64},   /* SAME, 27 taps, 27 inside pixels: 4 blocks of 6, 3 left */
    {17, 3, 3, 3, 2, 1, 9, 48},    /* stride 2, the 48-filter tail */
    {40, 2, 2, 3, 3, 0, 13, 16},   /* VALID, stride 3, 16 filters */
    {23, 4, 3, 3, 1, 1, 26, 144},  /* explicit pads 1 and 3: two edge pixels on the right */
    {19, 2, 5, 5, 1, 2, 19, 32},   /* 5x5, 50 taps */
    {3, 1, 3, 3, 1, 1, 3, 80},     /* narrower than a block: edge pixels only */
    {56, 16, 3, 3, 1, 1, 56, 64},  /* 144 taps */
};

/* out [ow, m] against the double sums of the taps inside (rows[i] NULL: left out), plus the
 * bias, clamped as `clamp` says; within 1e-5 of the sum of the terms' magnitudes. */
static void check(const char *what, const geom_t *g, const float *const *rows, const float *f,
                  const float *bias, int clamp, const float *out) {
  for (int64_t ox = 0; ox < g->ow; ox++)
    for (int64_t o = 0; o < g->m; o++) {
      double s = 0, mag = 0;
      for (int64_t i = 0; i < g->kh; i++) {
        if (!rows[i]) continue;
        for (int64_t q = 0; q < g->kw; q++) {
          int64_t ix = ox * g->sw - g->pl + q;
          if (ix < 0 || ix >= g->w) continue;
          for (int64_t ci = 0; ci < g->c; ci++) {
            double t = (double)rows[i][ix * g->c + ci] * f[((i * g->kw + q) * g->c + ci) * g->m + o];
            s += t;
            mag += fabs(t);
          }
        }
      }
      if (bias) {
        s += bias[o];
        mag += fabs(bias[o]);
      }
      if (clamp) s = s < 0 ? 0 : s;
      if (clamp == WEFT_GEMM_RELU6) s = s > 6 ? 6 : s;
      double got = out[ox * g->m + o];
      if (!(fabs(got - s) <= 1e-5 * mag + 1e-30))
        g_error("%s: out[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] = %.9g, expected %.9g", what,
                ox, o, got, s);
    }
}

static void test_levels(void) {
  struct {
    weft_cpu_isa_t isa;
    void (*row)(const weft_cpu_convd_t *, const float *const *, float *);
  } levels[] = {{WEFT_CPU_ISA_AVX2, weft__cpu_convd_row_avx2},
                {WEFT_CPU_ISA_AVX512, weft__cpu_convd_row_avx512}};
  int ran = 0;
  for (size_t l = 0; l < G_N_ELEMENTS(levels); l++) {
    if (!weft__cpu_isa_supported(levels[l].isa)) {
      g_test_message("%s: not supported here", weft__cpu_isa_name(levels[l].isa));
      continue;
    }
    ran++;
    for (size_t k = 0; k < G_N_ELEMENTS(geoms); k++) {
      const geom_t *g = &geoms[k];
      float *x = g_new(float, g->kh * g->w * g->c), *f = g_new(float, g->kh * g->kw * g->c * g->m);
      float *bias = g_new(float, g->m), *out = g_new(float, g->ow * g->m);
      fill(x, g->kh * g->w * g->c, 11 + (uint32_t)k);
      fill(f, g->kh * g->kw * g->c * g->m, 23 + (uint32_t)k);
      fill(bias, g->m, 37 + (uint32_t)k);
      const float *rows[8];
      for (int variant = 0; variant < 4; variant++) {
        /* Variants: all rows, no bias; the first row in the padding with bias and Relu; the
         * last with Relu6 (sums scaled past 6); every other row. */
        for (int64_t i = 0; i < g->kh; i++)
          rows[i] = (variant == 1 && i == 0) || (variant == 2 && i == g->kh - 1) ||
                            (variant == 3 && i % 2 == 1)
                        ? NULL
                        : x + i * g->w * g->c;
        int clamp = variant == 1 ? WEFT_GEMM_RELU : variant == 2 ? WEFT_GEMM_RELU6 : 0;
        if (variant == 2)
          for (int64_t q = 0; q < g->kh * g->kw * g->c * g->m; q++) f[q] *= 4.0f;
        weft_cpu_convd_t d = {g->kh, g->kw, g->c, g->w, g->sw, g->pl, g->ow, g->m, f,
                              variant ? bias : NULL, clamp};
        for (int64_t q = 0; q < g->ow * g->m; q++) out[q] = NAN;
        levels[l].row(&d, rows, out);
        char *what = g_strdup_printf("%s geometry %zu variant %d",
                                     weft__cpu_isa_name(levels[l].isa), k, variant);
        check(what, g, rows, f, d.bias, clamp, out);
        g_free(what);
      }
      /* A NaN input stays NaN through Relu (MAXPS with 0 first returns the NaN). */
      x[g->c] = NAN;
      for (int64_t i = 0; i < g->kh; i++) rows[i] = x + i * g->w * g->c;
      weft_cpu_convd_t d = {g->kh, g->kw, g->c, g->w, g->sw, g->pl, g->ow, g->m, f, NULL,
                            WEFT_GEMM_RELU};
      levels[l].row(&d, rows, out);
      g_assert_true(isnan(out[0]));
      g_free(x);
      g_free(f);
      g_free(bias);
      g_free(out);
    }
  }
  if (ran == 0) g_test_skip("no AVX2 or AVX-512 on this CPU");
}
#else
static void test_levels(void) {
  g_test_skip("the direct kernels are built for x86 only (AVX2, AVX-512)");
}
#endif

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conv_direct/levels", test_levels);
  return g_test_run();
}
