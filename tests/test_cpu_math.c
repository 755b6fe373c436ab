/* test_cpu_math.c: the CPU plugin's vectorised float32 Exp, Log, Tanh, Sigmoid, Expm1, Log1p,
 * Erf, Softplus, Elu, Selu, Sqrt, Rsqrt, Reciprocal, Softsign, Square, Neg, Abs, Relu, Relu6,
 * Sin, Cos and Erfc (plugins/cpu/cpu_vmath.h) at every instruction set level this
 * machine has: the largest error in ulp against double-precision libm over a dense sweep of
 * float bit patterns, the special values exactly (NaN, +-inf, +-0, denormals, overflow,
 * saturation), every tail length, WEFT_CPU_ISA's parsing and fallback, and the kernels through
 * a session with WEFT_CPU_ISA forcing each level (in a subprocess, since the plugin chooses
 * once). */
#include <float.h>
#include <glib.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_vmath.h"
#include "weft/weft.h"

#ifndef WEFT_SANITIZE
#define WEFT_SANITIZE 0
#endif

#define OK(st) g_assert_null(st)

static double ref_exp(double x) { return exp(x); }
static double ref_log(double x) { return log(x); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_expm1(double x) { return expm1(x); }
static double ref_log1p(double x) { return log1p(x); }
static double ref_erf(double x) { return erf(x); }
/* TensorFlow's float Softplus: x and e^x beyond +-13.94 (log(float epsilon) + 2), so the
 * reference is the same piecewise function in double, not log1p(e^x) everywhere. */
static double ref_softplus(double x) {
  return x > 13.942385 ? x : (x < -13.942385 ? exp(x) : log1p(exp(x)));
}
static double ref_elu(double x) { return x < 0 ? expm1(x) : x; }
/* The kernel's constants are the float roundings of TensorFlow's scale and scale * alpha. */
static double ref_selu(double x) {
  return x < 0 ? (double)1.7580993408473768600f * expm1(x) : (double)1.0507009873554804934f * x;
}

static double ref_sqrt(double x) { return sqrt(x); }
/* The kernel's 1 / sqrt(x) rounds twice (as TensorFlow's float Rsqrt): the reference is exact. */
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static double ref_reciprocal(double x) { return 1.0 / x; }
static double ref_softsign(double x) { return x / (1.0 + fabs(x)); }
static double ref_square(double x) { return x * x; }
static double ref_neg(double x) { return -x; }
static double ref_abs(double x) { return fabs(x); }
static double ref_relu(double x) { return x < 0 ? 0 : x; }
static double ref_relu6(double x) { return x < 0 ? 0 : (x > 6 ? 6 : x); }
static double ref_sin(double x) { return sin(x); }
static double ref_cos(double x) { return cos(x); }
static double ref_erfc(double x) { return erfc(x); }

typedef struct fn_case {
  const char *name;
  size_t offset; /* of the function in weft_cpu_vmath_t */
  double (*ref)(double);
  double max_ulp; /* allowed */
} fn_case_t;

static const fn_case_t fns[] = {
    /* A degree-5 polynomial after the reduction (cpu_vmath_impl.h): 2.4 ulp at worst. */
    {"exp", offsetof(weft_cpu_vmath_t, exp), ref_exp, 3},
    {"log", offsetof(weft_cpu_vmath_t, log), ref_log, 2},
    /* A rational x P(x^2) / Q(x^2) (cpu_vmath_impl.h): 6.0 ulp at worst over all floats (5.1
     * with FMA), near 1 where the roundings of P, Q and the quotient add up; 8 is the bound
     * docs/performance.md states, far inside the conformance suite's 2e-5 relative. */
    {"tanh", offsetof(weft_cpu_vmath_t, tanh), ref_tanh, 8},
    /* On the Exp op's e^x: 3.35 ulp at worst. */
    {"sigmoid", offsetof(weft_cpu_vmath_t, sigmoid), ref_sigmoid, 4},
    {"expm1", offsetof(weft_cpu_vmath_t, expm1), ref_expm1, 3},
    {"log1p", offsetof(weft_cpu_vmath_t, log1p), ref_log1p, 3},
    /* Below AVX-512 two polynomials: 2.55 ulp at worst (2.41 with FMA); at AVX-512 one of
     * sixteen per interval of |x|: 2.20 over every 97th float. */
    {"erf", offsetof(weft_cpu_vmath_t, erf), ref_erf, 3},
    {"softplus", offsetof(weft_cpu_vmath_t, softplus), ref_softplus, 3},
    {"elu", offsetof(weft_cpu_vmath_t, elu), ref_elu, 3},
    {"selu", offsetof(weft_cpu_vmath_t, selu), ref_selu, 3},
    {"sqrt", offsetof(weft_cpu_vmath_t, sqrt), ref_sqrt, 0.5},
    {"rsqrt", offsetof(weft_cpu_vmath_t, rsqrt), ref_rsqrt, 1.5},
    {"reciprocal", offsetof(weft_cpu_vmath_t, reciprocal), ref_reciprocal, 0.5},
    {"softsign", offsetof(weft_cpu_vmath_t, softsign), ref_softsign, 2},
    {"square", offsetof(weft_cpu_vmath_t, square), ref_square, 0.5},
    {"neg", offsetof(weft_cpu_vmath_t, neg), ref_neg, 0},
    {"abs", offsetof(weft_cpu_vmath_t, abs), ref_abs, 0},
    {"relu", offsetof(weft_cpu_vmath_t, relu), ref_relu, 0},
    {"relu6", offsetof(weft_cpu_vmath_t, relu6), ref_relu6, 0},
    {"sin", offsetof(weft_cpu_vmath_t, sin), ref_sin, 2},
    {"cos", offsetof(weft_cpu_vmath_t, cos), ref_cos, 2},
    {"erfc", offsetof(weft_cpu_vmath_t, erfc), ref_erfc, 5},
};

static weft_cpu_vm_fn fn_of(const weft_cpu_vmath_t *vm, const fn_case_t *c) {
  return *(const weft_cpu_vm_fn *)((const char *)vm + c->offset);
}

/* Error of `got` from the exact `want` in units of the float ulp at want (the spacing of
 * floats around it; denormal spacing below FLT_MIN). Both infinite and equal, or both NaN:
 * 0. One of them non-finite and the other not: infinity. */
static double ulp_error(float got, double want) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : INFINITY;
  if (isinf(got) || want > FLT_MAX || want < -FLT_MAX) {
    /* A finite want beyond FLT_MAX rounds to inf; an infinite got must come from that. */
    double w = want > FLT_MAX ? INFINITY : (want < -FLT_MAX ? -INFINITY : want);
    if ((double)got == w) return 0;
    if (isinf(w) || isinf(got)) {
      /* want just under the overflow threshold may round to FLT_MAX. */
      return fabs(want) < 0x1.ffffffp127 && fabs((double)got) == (double)FLT_MAX ? 0 : INFINITY;
    }
  }
  int e;
  frexp(want, &e);
  double ulp = ldexp(1.0, (e - 24) < -149 ? -149 : e - 24);
  return fabs((double)got - want) / ulp;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Raises *worst to the largest ulp error of c's y[i] = fn(x[i]) (i < n), with its x and y. */
static void worse_of(const fn_case_t *c, const float *x, const float *y, int n, double *worst,
                     float *worst_x, float *worst_got) {
  for (int i = 0; i < n; i++) {
    double err = ulp_error(y[i], c->ref((double)x[i]));
    if (err > *worst) {
      *worst = err;
      *worst_x = x[i];
      *worst_got = y[i];
    }
  }
}

/* Every `step`-th float bit pattern (both signs; NaNs included), through `fn` in blocks. */
static void sweep(const weft_cpu_vmath_t *vm, const fn_case_t *c, const char *level,
                  uint32_t step) {
  enum { BLOCK = 1 << 16 };
  float *x = g_new(float, BLOCK), *y = g_new(float, BLOCK);
  double worst = 0;
  float worst_x = 0, worst_got = 0;
  uint64_t u = 0;
  while (u <= 0xffffffffu) {
    int n = 0;
    for (; n < BLOCK && u <= 0xffffffffu; n++, u += step) x[n] = float_of((uint32_t)u);
    fn_of(vm, c)(x, y, n);
    worse_of(c, x, y, n, &worst, &worst_x, &worst_got);
  }
  g_test_message("%s %s: max error %.3f ulp (at %a) over every %u-th float", level, c->name,
                 worst, (double)worst_x, step);
  if (g_test_verbose()) g_printerr("%s %s: max %.3f ulp at %a\n", level, c->name, worst,
                                   (double)worst_x);
  if (worst > c->max_ulp)
    g_error("%s %s: %.3f ulp at %a (%a, want %a), allowed %.1f", level, c->name, worst,
            (double)worst_x, (double)worst_got, c->ref((double)worst_x), c->max_ulp);
  g_free(x);
  g_free(y);
}

/* The values whose results are exact by definition (glibc's and TensorFlow's). */
typedef struct special {
  const char *fn;
  float x, want;
} special_t;

static void check_specials(const weft_cpu_vmath_t *vm, const char *level) {
  const float inf = INFINITY, nan_ = NAN;
  const float dmin = 0x1p-149f; /* the smallest denormal */
  const special_t cases[] = {
      {"exp", -inf, 0},        {"exp", inf, inf},        {"exp", 0.0f, 1},
      {"exp", -0.0f, 1},       {"exp", 88.73f, inf},     {"exp", 1000, inf},
      {"exp", -1000, 0},       {"exp", -104, 0},         {"exp", -103.28f, dmin},
      {"exp", dmin, 1},        {"exp", -dmin, 1},        {"log", 0.0f, -inf},
      {"log", -0.0f, -inf},    {"log", 1, 0},            {"log", inf, inf},
      {"log", -1, nan_},       {"log", -inf, nan_},      {"log", -dmin, nan_},
      {"tanh", inf, 1},        {"tanh", -inf, -1},       {"tanh", 0.0f, 0.0f},
      {"tanh", -0.0f, -0.0f},  {"tanh", 10, 1},          {"tanh", -20, -1},
      {"tanh", dmin, dmin},    {"tanh", -dmin, -dmin},   {"tanh", 0x1p-100f, 0x1p-100f},
      /* The cap at 9.02 (tanh rounds to exactly +-1 from 9.0109 on) and beyond. */
      {"tanh", 9.02f, 1},      {"tanh", -9.02f, -1},     {"tanh", 9.5f, 1},
      {"tanh", -9.5f, -1},     {"tanh", 3e38f, 1},       {"tanh", -3e38f, -1},
      {"sigmoid", inf, 1},     {"sigmoid", -inf, 0},     {"sigmoid", 0.0f, 0.5f},
      {"sigmoid", -0.0f, 0.5f}, {"sigmoid", 17, 1},      {"sigmoid", 1000, 1},
      {"sigmoid", -1000, 0},   {"sigmoid", -104, 0},     {"sigmoid", dmin, 0.5f},
      {"sigmoid", 88, 1},      {"sigmoid", 3e38f, 1},
      {"exp", nan_, nan_},     {"log", nan_, nan_},      {"tanh", nan_, nan_},
      {"sigmoid", nan_, nan_},
      {"expm1", 0.0f, 0.0f},   {"expm1", -0.0f, -0.0f},  {"expm1", inf, inf},
      {"expm1", -inf, -1},     {"expm1", 89, inf},       {"expm1", -20, -1},
      {"expm1", dmin, dmin},   {"expm1", -dmin, -dmin},  {"expm1", nan_, nan_},
      {"log1p", 0.0f, 0.0f},   {"log1p", -0.0f, -0.0f},  {"log1p", inf, inf},
      {"log1p", -1, -inf},     {"log1p", -2, nan_},      {"log1p", -inf, nan_},
      {"log1p", dmin, dmin},   {"log1p", -dmin, -dmin},  {"log1p", nan_, nan_},
      {"erf", 0.0f, 0.0f},     {"erf", -0.0f, -0.0f},    {"erf", inf, 1},
      {"erf", -inf, -1},       {"erf", 4, 1},            {"erf", -10, -1},
      /* erf rounds to 1 from 3.9193; 3.99 is the clamp of the interval polynomials. */
      {"erf", 3.93f, 1},       {"erf", -3.95f, -1},      {"erf", 3.99f, 1},
      {"erf", 3.995f, 1},      {"erf", 3e38f, 1},        {"erf", dmin, dmin},
      {"erf", nan_, nan_},
      {"softplus", inf, inf},  {"softplus", -inf, 0},    {"softplus", 20, 20},
      {"softplus", -200, 0},   {"softplus", nan_, nan_},
      {"elu", 0.0f, 0.0f},     {"elu", -0.0f, -0.0f},    {"elu", inf, inf},
      {"elu", -inf, -1},       {"elu", 3, 3},            {"elu", nan_, nan_},
      {"selu", 0.0f, 0.0f},    {"selu", -0.0f, -0.0f},   {"selu", inf, inf},
      {"selu", -inf, -1.7580993408473768600f},           {"selu", nan_, nan_},
      {"sqrt", 0.0f, 0.0f},    {"sqrt", -0.0f, -0.0f},   {"sqrt", inf, inf},
      {"sqrt", -1, nan_},      {"sqrt", nan_, nan_},     {"sqrt", 4, 2},
      {"rsqrt", 0.0f, inf},    {"rsqrt", -0.0f, -inf},   {"rsqrt", inf, 0},
      {"rsqrt", -1, nan_},     {"rsqrt", 4, 0.5f},       {"rsqrt", nan_, nan_},
      {"reciprocal", 0.0f, inf}, {"reciprocal", -0.0f, -inf}, {"reciprocal", inf, 0},
      {"reciprocal", -inf, -0.0f}, {"reciprocal", nan_, nan_},
      {"softsign", 0.0f, 0.0f}, {"softsign", -0.0f, -0.0f}, {"softsign", nan_, nan_},
      {"softsign", 1, 0.5f},   {"softsign", inf, nan_},  {"softsign", 3e38f, 1},
      {"square", -3, 9},       {"square", 1e20f, inf},   {"square", nan_, nan_},
      {"neg", 0.0f, -0.0f},    {"neg", -inf, inf},       {"neg", nan_, nan_},
      {"abs", -0.0f, 0.0f},    {"abs", -inf, inf},       {"abs", nan_, nan_},
      {"relu", -0.0f, -0.0f},  {"relu", -inf, 0},        {"relu", inf, inf},
      {"relu", -1, 0},         {"relu", nan_, nan_},
      {"relu6", -inf, 0},      {"relu6", inf, 6},        {"relu6", 7, 6},
      {"relu6", -0.0f, -0.0f}, {"relu6", nan_, nan_},
      {"sin", 0.0f, 0.0f},     {"sin", -0.0f, -0.0f},    {"sin", inf, nan_},
      {"sin", -inf, nan_},     {"sin", nan_, nan_},      {"sin", dmin, dmin},
      {"sin", 0x1p-100f, 0x1p-100f},
      {"cos", 0.0f, 1},        {"cos", -0.0f, 1},        {"cos", inf, nan_},
      {"cos", -inf, nan_},     {"cos", nan_, nan_},      {"cos", dmin, 1},
      {"erfc", 0.0f, 1},       {"erfc", -0.0f, 1},       {"erfc", inf, 0},
      {"erfc", -inf, 2},       {"erfc", nan_, nan_},     {"erfc", 11, 0},
      {"erfc", -10, 2},        {"erfc", 100, 0},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const fn_case_t *c = NULL;
    for (size_t f = 0; f < G_N_ELEMENTS(fns); f++)
      if (strcmp(fns[f].name, cases[k].fn) == 0) c = &fns[f];
    g_assert_nonnull(c);
    /* In a full vector and alone in a tail. */
    float x[17], y[17];
    for (int i = 0; i < 17; i++) x[i] = cases[k].x;
    for (int n = 1; n <= 17; n += 16) {
      fn_of(vm, c)(x, y, n);
      for (int i = 0; i < n; i++) {
        float want = cases[k].want, got = y[i];
        gboolean same = isnan(want) ? isnan(got) : bits_of(got) == bits_of(want);
        if (!same)
          g_error("%s %s(%a) = %a, want %a", level, c->name, (double)cases[k].x, (double)got,
                  (double)want);
      }
    }
  }
  /* Denormal and tiny-normal inputs to log (the scaled path) against libm. */
  for (uint32_t u = 1; u < 0x01000000u; u += 4099) {
    float xf = float_of(u), got;
    vm->log(&xf, &got, 1);
    g_assert_cmpfloat(ulp_error(got, log((double)xf)), <=, fns[1].max_ulp);
  }
}

/* Every length from 0 to 40 (whole vectors and every tail) gives what one-at-a-time does,
 * and writes nothing past n. */
static void check_lengths(const weft_cpu_vmath_t *vm, const char *level) {
  float x[41], y[42], one;
  for (int i = 0; i < 41; i++) x[i] = (float)(i - 20) * 0.37f + 0.01f;
  for (size_t f = 0; f < G_N_ELEMENTS(fns); f++) {
    for (int n = 0; n <= 40; n++) {
      for (int i = 0; i < 42; i++) y[i] = -7.0f;
      fn_of(vm, &fns[f])(x, y, n);
      for (int i = 0; i < n; i++) {
        fn_of(vm, &fns[f])(&x[i], &one, 1);
        if (!(bits_of(one) == bits_of(y[i]) || (isnan(one) && isnan(y[i]))))
          g_error("%s %s: n=%d element %d differs from n=1", level, fns[f].name, n, i);
      }
      for (int i = n; i < 42; i++) g_assert_cmpfloat(y[i], ==, -7.0f);
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Binary functions */

typedef struct fn2_case {
  const char *name;
  size_t offset; /* of the weft_cpu_vm2_t in weft_cpu_vmath_t */
  float (*ref)(float, float); /* the scalar kernel's expression (cpu_binary.c) */
} fn2_case_t;

static float ref2_add(float a, float b) { return a + b; }
static float ref2_sub(float a, float b) { return a - b; }
static float ref2_mul(float a, float b) { return a * b; }
static float ref2_div(float a, float b) { return a / b; }
static float ref2_maximum(float a, float b) { return (a > b || a != a) ? a : b; }
static float ref2_minimum(float a, float b) { return (a < b || a != a) ? a : b; }
static float ref2_sqdiff(float a, float b) { return (a - b) * (a - b); }

/* One IEEE operation (or a choice) per element: the vector loops give the scalar bits. */
static const fn2_case_t fns2[] = {
    {"add", offsetof(weft_cpu_vmath_t, add), ref2_add},
    {"sub", offsetof(weft_cpu_vmath_t, sub), ref2_sub},
    {"mul", offsetof(weft_cpu_vmath_t, mul), ref2_mul},
    {"div", offsetof(weft_cpu_vmath_t, div), ref2_div},
    {"maximum", offsetof(weft_cpu_vmath_t, maximum), ref2_maximum},
    {"minimum", offsetof(weft_cpu_vmath_t, minimum), ref2_minimum},
    {"sqdiff", offsetof(weft_cpu_vmath_t, sqdiff), ref2_sqdiff},
};

/* Pow's bound, in ulp against double pow: the double-precision path rounds once to float
 * (0.5 ulp and a hair), the lanes left to libm are glibc powf's (0.5007 ulp measured here). */
#define POW_MAX_ULP 1.0

static const weft_cpu_vm2_t *fn2_of(const weft_cpu_vmath_t *vm, size_t offset) {
  return (const weft_cpu_vm2_t *)(const void *)((const char *)vm + offset);
}

static gboolean same_float(float a, float b) {
  return isnan(a) ? isnan(b) : bits_of(a) == bits_of(b);
}

/* Values that probe the binary functions' corners: signed zeros, infinities, NaN, denormals,
 * the integers pow treats apart (odd, even, huge), halves and ordinary numbers. */
static const float probe[] = {0.0f,    -0.0f,   1.0f,     -1.0f,     2.0f,   -2.0f,   3.0f,
                              -3.0f,   0.5f,    -0.5f,    2.5f,      -7.25f, 1e-3f,   1e30f,
                              -1e30f,  0x1p-149f, -0x1p-140f, 0x1p-127f, 16777217.0f,
                              16777216.0f, -8388609.0f, 100.0f, -100.5f, 1.0000001f,
                              0.9999999f, INFINITY, -INFINITY, NAN};

/* Each vector loop (vv, sv, vs) of each bit-exact function, over every pair of probes and a
 * pseudo-random block, at every length from 0 to 40, against the scalar expression, writing
 * nothing past n; and in place (z the same array as x or y). */
static void check_binary_exact(const weft_cpu_vmath_t *vm, const char *level) {
  enum { N = 40 };
  float xs[N + 2], ys[N + 2], z[N + 2];
  for (size_t f = 0; f < G_N_ELEMENTS(fns2); f++) {
    const weft_cpu_vm2_t *v = fn2_of(vm, fns2[f].offset);
    for (size_t p = 0; p < G_N_ELEMENTS(probe); p++) {
      for (int i = 0; i < N; i++) {
        xs[i] = probe[p];
        ys[i] = probe[((size_t)i * 7 + p) % G_N_ELEMENTS(probe)];
      }
      for (int n = 0; n <= N; n++) {
        for (int form = 0; form < 3; form++) {
          for (int i = 0; i < N + 2; i++) z[i] = -7.0f;
          weft_cpu_vm2_fn fn = form == 0 ? v->vv : (form == 1 ? v->sv : v->vs);
          fn(xs, ys, z, n);
          for (int i = 0; i < n; i++) {
            float a = form == 1 ? xs[0] : xs[i], b = form == 2 ? ys[0] : ys[i];
            float want = fns2[f].ref(a, b);
            if (!same_float(z[i], want))
              g_error("%s %s form %d n=%d: f(%a, %a) = %a, want %a", level, fns2[f].name, form,
                      n, (double)a, (double)b, (double)z[i], (double)want);
          }
          for (int i = n; i < N + 2; i++) g_assert_cmpfloat(z[i], ==, -7.0f);
        }
      }
    }
    /* In place, on ordinary numbers. */
    float a[N], b[N];
    for (int i = 0; i < N; i++) {
      a[i] = (float)(i - 20) * 0.37f + 0.01f;
      b[i] = (float)(i % 9) * -1.3f + 2.0f;
    }
    memcpy(z, a, sizeof a);
    v->vv(z, b, z, N);
    for (int i = 0; i < N; i++) g_assert_true(same_float(z[i], fns2[f].ref(a[i], b[i])));
    memcpy(z, b, sizeof b);
    v->vv(a, z, z, N);
    for (int i = 0; i < N; i++) g_assert_true(same_float(z[i], fns2[f].ref(a[i], b[i])));
  }
}

/* The streaming forms (vm->nt) give the plain loops' bits for every length from 0 to 80 and
 * every alignment of the output (the partial-vector head before the aligned streaming stores),
 * write nothing outside it, and are their own nt. */
static void check_streaming(const weft_cpu_vmath_t *vm, const char *level) {
  enum { N = 80, PAD = 16 };
  const weft_cpu_vmath_t *nt = vm->nt;
  g_assert_true(nt != vm);
  g_assert_true(nt->nt == nt);
  /* 64-byte aligned, so that offset k puts y k floats past a line. */
  float *x = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  float *b = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  float *want = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  float *got = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  for (int i = 0; i < N + 2 * PAD; i++) {
    x[i] = (float)(i - 40) * 0.37f + 0.01f;
    b[i] = (float)(i % 9) * -1.3f + 2.0f;
  }
  for (int off = 0; off < PAD; off++) {
    for (int n = 0; n <= N; n += (n < 40 ? 1 : 7)) {
      for (size_t f = 0; f < G_N_ELEMENTS(fns); f++) {
        for (int i = 0; i < N + 2 * PAD; i++) want[i] = got[i] = -7.0f;
        fn_of(vm, &fns[f])(x, want + off, n);
        fn_of(nt, &fns[f])(x, got + off, n);
        weft__cpu_stream_fence();
        for (int i = 0; i < N + 2 * PAD; i++)
          if (!same_float(got[i], want[i]))
            g_error("%s %s streaming, y at +%d, n=%d: element %d is %a, want %a", level,
                    fns[f].name, off, n, i - off, (double)got[i], (double)want[i]);
      }
      for (size_t f = 0; f < G_N_ELEMENTS(fns2) + 1; f++) {
        size_t offset = f < G_N_ELEMENTS(fns2) ? fns2[f].offset : offsetof(weft_cpu_vmath_t, pow);
        for (int form = 0; form < 3; form++) {
          const weft_cpu_vm2_t *pv = fn2_of(vm, offset), *nv = fn2_of(nt, offset);
          weft_cpu_vm2_fn pf = form == 0 ? pv->vv : (form == 1 ? pv->sv : pv->vs);
          weft_cpu_vm2_fn nf = form == 0 ? nv->vv : (form == 1 ? nv->sv : nv->vs);
          for (int i = 0; i < N + 2 * PAD; i++) want[i] = got[i] = -7.0f;
          pf(b, x, want + off, n);
          nf(b, x, got + off, n);
          weft__cpu_stream_fence();
          for (int i = 0; i < N + 2 * PAD; i++) g_assert_true(same_float(got[i], want[i]));
        }
      }
    }
  }
  g_aligned_free(x);
  g_aligned_free(b);
  g_aligned_free(want);
  g_aligned_free(got);
}

/* Pow: every pair of probes in all three forms (the special cases as powf's, sign of zero
 * included, where libm takes the lanes: both are C's pow), and every `step`-th positive and
 * negative float base against exponents from -40 to 40 and the probes' ordinary ones, within
 * POW_MAX_ULP of double pow. */
static void check_pow(const weft_cpu_vmath_t *vm, const char *level, uint32_t step) {
  const weft_cpu_vm2_t *v = &vm->pow;
  enum { NP = G_N_ELEMENTS(probe) };
  float xs[NP], ys[NP], z[NP];
  for (size_t p = 0; p < NP; p++) {
    for (size_t q = 0; q < NP; q++) {
      xs[q] = probe[p];
      ys[q] = probe[q];
    }
    for (int form = 0; form < 3; form++) {
      for (size_t q = 0; q < NP; q++) {
        weft_cpu_vm2_fn fn = form == 0 ? v->vv : (form == 1 ? v->sv : v->vs);
        /* sv: the base probe[p] against each exponent; vs: each base against probe[q]. */
        float a = form == 2 ? ys[q] : xs[q], b = form == 2 ? xs[q] : ys[q];
        float aa[NP], bb[NP];
        for (size_t i = 0; i < NP; i++) {
          aa[i] = a;
          bb[i] = b;
        }
        fn(aa, bb, z, NP);
        double want = pow((double)a, (double)b);
        float libm = powf(a, b);
        for (size_t i = 0; i < NP; i++) {
          double err = ulp_error(z[i], want);
          gboolean zero_sign_ok = want != 0 || signbit(z[i]) == signbit(libm);
          if (err > POW_MAX_ULP || !zero_sign_ok)
            g_error("%s pow form %d: pow(%a, %a) = %a, want %a (powf %a)", level, form,
                    (double)a, (double)b, (double)z[i], want, (double)libm);
        }
      }
    }
  }
  enum { BLOCK = 4096 };
  float *x = g_new(float, BLOCK), *e = g_new(float, BLOCK), *y = g_new(float, BLOCK);
  double worst = 0;
  float worst_a = 0, worst_b = 0;
  uint32_t k = 0;
  for (uint64_t u = 0; u <= 0xffffffffu;) {
    int n = 0;
    for (; n < BLOCK && u <= 0xffffffffu; n++, u += step, k++) {
      x[n] = float_of((uint32_t)u);
      /* Integers for the negative bases (else NaN, a special case above), any for the rest. */
      float b = (float)((int)(k % 81) - 40);
      if (!signbit(x[n]) && k % 3 != 0) b = b * 0.37f + probe[k % 13] * 0.125f;
      e[n] = b;
    }
    v->vv(x, e, y, n);
    for (int i = 0; i < n; i++) {
      /* NaN bases are the probes' (a signaling NaN widened to double turns quiet, and
       * pow(quiet NaN, 0) is 1 where powf(signaling NaN, 0) is NaN). */
      if (isnan(x[i])) continue;
      double err = ulp_error(y[i], pow((double)x[i], (double)e[i]));
      if (err > worst) {
        worst = err;
        worst_a = x[i];
        worst_b = e[i];
      }
    }
  }
  g_test_message("%s pow: max error %.4f ulp (at %a, %a) over every %u-th float base", level,
                 worst, (double)worst_a, (double)worst_b, step);
  if (g_test_verbose())
    g_printerr("%s pow: max %.4f ulp at (%a, %a)\n", level, worst, (double)worst_a,
               (double)worst_b);
  if (worst > POW_MAX_ULP)
    g_error("%s pow: %.4f ulp at (%a, %a), allowed %.3f", level, worst, (double)worst_a,
            (double)worst_b, POW_MAX_ULP);
  /* The scalar exponents with a short form of their own (cpu_vmath_impl.h's vpow_c2 ...): every
   * `step`-th float of either sign as the base, within POW_MAX_ULP of double pow, a zero or an
   * infinity of powf's sign (NaN bases give NaN), in the plain and the streaming loops. */
  static const float short_forms[] = {2.0f, 3.0f, 4.0f, -1.0f, -2.0f, 0.5f, -0.5f};
  for (size_t s = 0; s < G_N_ELEMENTS(short_forms); s++) {
    const float c = short_forms[s];
    double worst_c = 0;
    float worst_ca = 0;
    for (uint64_t u = 0; u <= 0xffffffffu;) {
      int n = 0;
      for (; n < BLOCK && u <= 0xffffffffu; n++, u += step) x[n] = float_of((uint32_t)u);
      for (int form = 0; form < 2; form++) {
        (form ? vm->nt->pow.vs : v->vs)(x, &c, y, n);
        for (int i = 0; i < n; i++) {
          float libm = powf(x[i], c);
          if (isnan(x[i])) {
            if (!isnan(y[i])) g_error("%s pow(%a, %g) = %a, want NaN", level, (double)x[i], c,
                                      (double)y[i]);
            continue;
          }
          double err = ulp_error(y[i], pow((double)x[i], (double)c));
          gboolean sign_ok = (libm != 0 && !isinf(libm)) || signbit(y[i]) == signbit(libm);
          if (err > POW_MAX_ULP || !sign_ok)
            g_error("%s pow(%a, %g) = %a, want %a (powf %a)", level, (double)x[i], c,
                    (double)y[i], pow((double)x[i], (double)c), (double)libm);
          if (err > worst_c) {
            worst_c = err;
            worst_ca = x[i];
          }
        }
      }
    }
    g_test_message("%s pow(x, %g): max error %.4f ulp (at %a)", level, c, worst_c,
                   (double)worst_ca);
  }
  g_free(x);
  g_free(e);
  g_free(y);
}

/* The chain evaluator (vm->chain, and its streaming form) against the loops it stands for,
 * called one after the other: the same bits for every op alone, every pair, and a few longer
 * chains, at lengths that leave every tail and y at every offset within a vector. */
static void check_chain(const weft_cpu_vmath_t *vm, const char *level) {
  static const size_t loop_of[WEFT_CPU_VOP_COUNT] = {
      [WEFT_CPU_VOP_EXP] = offsetof(weft_cpu_vmath_t, exp),
      [WEFT_CPU_VOP_LOG] = offsetof(weft_cpu_vmath_t, log),
      [WEFT_CPU_VOP_TANH] = offsetof(weft_cpu_vmath_t, tanh),
      [WEFT_CPU_VOP_SIGMOID] = offsetof(weft_cpu_vmath_t, sigmoid),
      [WEFT_CPU_VOP_EXPM1] = offsetof(weft_cpu_vmath_t, expm1),
      [WEFT_CPU_VOP_LOG1P] = offsetof(weft_cpu_vmath_t, log1p),
      [WEFT_CPU_VOP_ERF] = offsetof(weft_cpu_vmath_t, erf),
      [WEFT_CPU_VOP_SOFTPLUS] = offsetof(weft_cpu_vmath_t, softplus),
      [WEFT_CPU_VOP_ELU] = offsetof(weft_cpu_vmath_t, elu),
      [WEFT_CPU_VOP_SELU] = offsetof(weft_cpu_vmath_t, selu),
      [WEFT_CPU_VOP_SQRT] = offsetof(weft_cpu_vmath_t, sqrt),
      [WEFT_CPU_VOP_RSQRT] = offsetof(weft_cpu_vmath_t, rsqrt),
      [WEFT_CPU_VOP_RECIPROCAL] = offsetof(weft_cpu_vmath_t, reciprocal),
      [WEFT_CPU_VOP_SOFTSIGN] = offsetof(weft_cpu_vmath_t, softsign),
      [WEFT_CPU_VOP_SQUARE] = offsetof(weft_cpu_vmath_t, square),
      [WEFT_CPU_VOP_NEG] = offsetof(weft_cpu_vmath_t, neg),
      [WEFT_CPU_VOP_RELU] = offsetof(weft_cpu_vmath_t, relu),
      [WEFT_CPU_VOP_RELU6] = offsetof(weft_cpu_vmath_t, relu6),
      [WEFT_CPU_VOP_SIN] = offsetof(weft_cpu_vmath_t, sin),
      [WEFT_CPU_VOP_COS] = offsetof(weft_cpu_vmath_t, cos),
      [WEFT_CPU_VOP_ABS] = offsetof(weft_cpu_vmath_t, abs),
      [WEFT_CPU_VOP_ERFC] = offsetof(weft_cpu_vmath_t, erfc),
      [WEFT_CPU_VOP_SIGMOID_ABOVE_M87] = offsetof(weft_cpu_vmath_t, sigmoid_above_m87),
      [WEFT_CPU_VOP_TANH_NONNEG_SMALL] = offsetof(weft_cpu_vmath_t, tanh_nonneg_small),
  };
  enum { N = 150, PAD = 16, MAXOPS = 6 };
  float *x = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  float *want = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  float *got = g_aligned_alloc(N + 2 * PAD, sizeof(float), 64);
  for (int i = 0; i < N + 2 * PAD; i++) x[i] = (float)(i - 75) * 0.23f + 0.005f;
  x[3] = NAN;
  x[5] = INFINITY;
  x[7] = -INFINITY;
  x[9] = -0.0f;
  x[11] = 1e-40f;
  x[13] = -95.0f;
  x[15] = 100.0f;
  /* Chains: each op alone, each pair, then the benchmark's and some longer ones. */
  uint8_t chains[WEFT_CPU_VOP_COUNT * (WEFT_CPU_VOP_COUNT + 1) + 3][MAXOPS];
  int lens[G_N_ELEMENTS(chains)];
  size_t n_chains = 0;
  for (int a = 0; a < WEFT_CPU_VOP_COUNT; a++) {
    chains[n_chains][0] = (uint8_t)a;
    lens[n_chains++] = 1;
    for (int b = 0; b < WEFT_CPU_VOP_COUNT; b++) {
      chains[n_chains][0] = (uint8_t)a;
      chains[n_chains][1] = (uint8_t)b;
      lens[n_chains++] = 2;
    }
  }
  static const uint8_t longer[3][MAXOPS] = {
      {WEFT_CPU_VOP_NEG, WEFT_CPU_VOP_EXP, WEFT_CPU_VOP_SIGMOID, WEFT_CPU_VOP_TANH,
       WEFT_CPU_VOP_RELU},
      {WEFT_CPU_VOP_ABS, WEFT_CPU_VOP_SQRT, WEFT_CPU_VOP_LOG1P, WEFT_CPU_VOP_SQUARE,
       WEFT_CPU_VOP_SIN, WEFT_CPU_VOP_RELU6},
      {WEFT_CPU_VOP_SELU, WEFT_CPU_VOP_ERFC, WEFT_CPU_VOP_SOFTPLUS, WEFT_CPU_VOP_RSQRT,
       WEFT_CPU_VOP_ELU, WEFT_CPU_VOP_SOFTSIGN},
  };
  for (int k = 0; k < 3; k++) {
    memcpy(chains[n_chains], longer[k], MAXOPS);
    lens[n_chains++] = k == 0 ? 5 : 6;
  }
  for (size_t c = 0; c < n_chains; c++) {
    /* Pairs at a few shapes, the rest at every offset and many lengths. */
    int offs = lens[c] == 2 ? 2 : PAD, step = lens[c] == 2 ? 37 : 1;
    for (int off = 0; off < offs; off++) {
      for (int n = lens[c] == 2 ? 1 : 0; n <= N; n += (n < 70 ? step : 23)) {
        for (int form = 0; form < 2; form++) {
          const weft_cpu_vmath_t *t = form ? vm->nt : vm;
          for (int i = 0; i < N + 2 * PAD; i++) want[i] = got[i] = -7.0f;
          if (n > 0) {
            memcpy(want + off, x, (size_t)n * sizeof(float));
            /* As the unfused ops run: only the last one's output streamed. */
            for (int k = 0; k < lens[c]; k++)
              (*(const weft_cpu_vm_fn *)(const void *)((const char *)(k == lens[c] - 1 ? t : vm) +
                                                       loop_of[chains[c][k]]))(want + off,
                                                                               want + off, n);
          }
          t->chain(chains[c], lens[c], x, got + off, n);
          weft__cpu_stream_fence();
          for (int i = 0; i < N + 2 * PAD; i++)
            if (!same_float(got[i], want[i]))
              g_error("%s chain %zu (%d ops, first %d)%s, y at +%d, n=%d: element %d is %a, want "
                      "%a", level, c, lens[c], chains[c][0], form ? " streaming" : "", off, n,
                      i - off, (double)got[i], (double)want[i]);
        }
      }
    }
  }
  g_aligned_free(x);
  g_aligned_free(want);
  g_aligned_free(got);
}

/* Every float within 2048 of each end of erf's sixteen intervals at AVX-512 (|x| = k/4, and
 * the clamp at 3.99), both signs, for erf and erfc (whose x < 0.5 is 1 - erf x): where a lane
 * changes polynomial, an off-by-one index or a misfit end would show first. Checked at every
 * level (the others have no intervals there, but the same bounds). */
static void check_erf_edges(const weft_cpu_vmath_t *vm, const char *level) {
  enum { SIDE = 2048, N = 2 * SIDE };
  float x[N], y[N];
  for (size_t f = 0; f < G_N_ELEMENTS(fns); f++) {
    const fn_case_t *c = &fns[f];
    if (strcmp(c->name, "erf") != 0 && strcmp(c->name, "erfc") != 0) continue;
    double worst = 0;
    float worst_x = 0, worst_got = 0;
    for (int k = 1; k <= 17; k++) {
      float edge = k == 17 ? 3.99f : (float)k / 4;
      for (int sign = 0; sign < 2; sign++) {
        uint32_t e = bits_of(sign ? -edge : edge);
        for (int i = 0; i < N; i++) x[i] = float_of(e - SIDE + (uint32_t)i);
        fn_of(vm, c)(x, y, N);
        worse_of(c, x, y, N, &worst, &worst_x, &worst_got);
      }
    }
    if (strcmp(c->name, "erfc") == 0) {
      /* erfc's worst point over every float (4.02 ulp at avx512), which the every-97th sweep
       * misses: e^(-x^2) erfcx there, the product of two exps and the polynomial rounded. */
      uint32_t e = bits_of(0x1.0e7edep+3f);
      for (int i = 0; i < N; i++) x[i] = float_of(e - SIDE + (uint32_t)i);
      fn_of(vm, c)(x, y, N);
      worse_of(c, x, y, N, &worst, &worst_x, &worst_got);
    }
    g_test_message("%s %s: max error %.3f ulp (at %a) at the interval ends", level, c->name,
                   worst, (double)worst_x);
    if (worst > c->max_ulp)
      g_error("%s %s: %.3f ulp at %a near an interval end, allowed %.1f", level, c->name, worst,
              (double)worst_x, c->max_ulp);
  }
}

/* The forms a fused chain takes where it knows its input's range (cpu_fused.c) give the bits
 * of the op itself over that whole range: every float from -87 up (and +inf and NaNs) for
 * Sigmoid's, from -0 to 8 for Tanh's, walked in runs of every length class, plain and
 * streaming. `stride` thins the walk (every fifth float in the optimised build). */
static void check_range_forms(const weft_cpu_vmath_t *vm, const char *level, uint32_t stride) {
  enum { RUN = 4099 };
  static const struct {
    const char *name;
    size_t form, op;
    uint32_t from, to; /* bit patterns, walked from..to */
  } forms[] = {
      {"sigmoid_above_m87", offsetof(weft_cpu_vmath_t, sigmoid_above_m87),
       offsetof(weft_cpu_vmath_t, sigmoid), 0x00000000u, 0x7fffffffu},
      {"sigmoid_above_m87", offsetof(weft_cpu_vmath_t, sigmoid_above_m87),
       offsetof(weft_cpu_vmath_t, sigmoid), 0x80000000u, 0xc2ae0000u /* -87 */},
      {"tanh_nonneg_small", offsetof(weft_cpu_vmath_t, tanh_nonneg_small),
       offsetof(weft_cpu_vmath_t, tanh), 0x00000000u, 0x41000000u /* 8 */},
      {"tanh_nonneg_small", offsetof(weft_cpu_vmath_t, tanh_nonneg_small),
       offsetof(weft_cpu_vmath_t, tanh), 0x80000000u, 0x80000000u /* -0 */},
  };
  float *x = g_new(float, RUN), *got = g_new(float, RUN), *want = g_new(float, RUN);
  for (size_t f = 0; f < G_N_ELEMENTS(forms); f++) {
    for (int streamed = 0; streamed < 2; streamed++) {
      const weft_cpu_vmath_t *t = streamed ? vm->nt : vm;
      const char *tc = (const char *)t, *vc = (const char *)vm;
      weft_cpu_vm_fn form = *(const weft_cpu_vm_fn *)(const void *)(tc + forms[f].form);
      weft_cpu_vm_fn op = *(const weft_cpu_vm_fn *)(const void *)(vc + forms[f].op);
      uint64_t b = forms[f].from, checked = 0;
      while (b <= forms[f].to) {
        int n = 0;
        for (; n < RUN && b <= forms[f].to; n++, b += streamed ? stride * 7 : stride)
          x[n] = float_of((uint32_t)b);
        form(x, got, n);
        weft__cpu_stream_fence();
        op(x, want, n);
        for (int i = 0; i < n; i++)
          if (!same_float(got[i], want[i]))
            g_error("%s %s%s: at %a %a, the op gives %a", level, forms[f].name,
                    streamed ? " streaming" : "", (double)x[i], (double)got[i], (double)want[i]);
        checked += (uint64_t)n;
      }
      g_test_message("%s %s%s: %" G_GUINT64_FORMAT " floats the op's bits", level, forms[f].name,
                     streamed ? " streaming" : "", checked);
    }
  }
  g_free(x);
  g_free(got);
  g_free(want);
}

static void test_level(gconstpointer data) {
  weft_cpu_isa_t isa = (weft_cpu_isa_t)GPOINTER_TO_INT(data);
  if (!weft__cpu_isa_supported(isa)) {
    g_test_skip("this CPU cannot run it");
    return;
  }
  const weft_cpu_vmath_t *vm = weft__cpu_vmath_for(isa);
  const char *level = weft__cpu_isa_name(isa);
  check_specials(vm, level);
  check_lengths(vm, level);
  check_binary_exact(vm, level);
  check_streaming(vm, level);
  check_chain(vm, level);
  check_erf_edges(vm, level);
  check_range_forms(vm, level, WEFT_SANITIZE ? 997 : 5);
  /* Every 97th pattern: about 44 million floats per function, all exponents, odd step so
   * that every low-bit pattern of the mantissa comes up. The correctly rounded ones (one IEEE
   * operation, bound 0.5 ulp or exact) every 997th: there is no approximation to probe. The
   * sanitizer build (unoptimised, instrumented) walks a tenth as many: it looks for memory and
   * undefined-behaviour errors, which every length and special above already reach; the
   * accuracy is the optimised build's to measure. */
  uint32_t scale = WEFT_SANITIZE ? 10 : 1;
  for (size_t f = 0; f < G_N_ELEMENTS(fns); f++)
    sweep(vm, &fns[f], level, (fns[f].max_ulp <= 0.5 ? 997 : 97) * scale + (scale > 1));
  check_pow(vm, level, 97 * scale + (scale > 1));
}

static void test_choose(void) {
  char *warning = NULL;
  weft_cpu_isa_t best = weft__cpu_isa_choose(NULL, &warning);
  g_assert_null(warning);
  g_assert_true(weft__cpu_isa_supported(best));
  g_assert_cmpint(weft__cpu_isa_choose("", &warning), ==, best);
  g_assert_null(warning);
  g_assert_cmpint(weft__cpu_isa_choose("baseline", &warning), ==, WEFT_CPU_ISA_BASELINE);
  g_assert_null(warning);
  g_assert_cmpint(weft__cpu_isa_choose("sse9", &warning), ==, best);
  g_assert_nonnull(warning);
  g_assert_nonnull(strstr(warning, "sse9"));
  free(warning);
  for (int k = 0; k < WEFT_CPU_ISA_COUNT; k++) {
    weft_cpu_isa_t got = weft__cpu_isa_choose(weft__cpu_isa_name((weft_cpu_isa_t)k), &warning);
    if (weft__cpu_isa_supported((weft_cpu_isa_t)k)) {
      g_assert_cmpint(got, ==, k);
      g_assert_null(warning);
    } else {
      g_assert_cmpint(got, ==, best);
      g_assert_nonnull(warning);
      free(warning);
    }
  }
}

/* WEFT_CPU_STREAM_BYTES's parsing: a byte count as given (0 turns streaming off), anything else
 * a warning naming it and the last-level cache's size, as without it. */
static void test_stream_choose(void) {
  char *warning = NULL;
  int64_t dflt = weft__cpu_stream_choose(NULL, &warning);
  g_assert_null(warning);
  g_assert_cmpint(dflt, >, 0);
  g_assert_cmpint(weft__cpu_stream_choose("", &warning), ==, dflt);
  g_assert_null(warning);
  g_assert_cmpint(weft__cpu_stream_choose("0", &warning), ==, 0);
  g_assert_null(warning);
  g_assert_cmpint(weft__cpu_stream_choose("1048576", &warning), ==, 1048576);
  g_assert_null(warning);
  const char *bad[] = {"-1", "12MiB", "lots", "99999999999999999999999"};
  for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
    g_assert_cmpint(weft__cpu_stream_choose(bad[k], &warning), ==, dflt);
    g_assert_nonnull(warning);
    char *want = g_strdup_printf("WEFT_CPU_STREAM_BYTES=%s is not a byte count (0 or more); "
                                 "using the last-level cache's size", bad[k]);
    g_assert_cmpstr(warning, ==, want);
    g_free(want);
    free(warning);
  }
}

/* A graph on the CPU with xs[0..n) as the constant *x. */
static weft_graph_t *graph_with_x(const float *xs, int n, weft_output_t *x) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  int64_t dims[1] = {n};
  weft_tensor_t *t =
      weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, xs, (size_t)n * sizeof(float), &st);
  OK(st);
  *x = weft_const(g, "x", t, &st);
  OK(st);
  weft_tensor_unref(t);
  return g;
}

/* The vectorised ops through a CPU session, in this process (whose WEFT_CPU_ISA the
 * parent set), against double libm. */
static void session_child(void) {
  enum { N = 1003 }; /* several pool chunks' worth, with a tail */
  static const char *const ops[] = {
      "Exp",  "Log",        "Tanh",     "Sigmoid", "Expm1", "Log1p", "Erf",  "Softplus",
      "Elu",  "Selu",       "Sqrt",     "Rsqrt",   "Reciprocal", "Softsign", "Square", "Neg",
      "Abs",  "Relu",       "Relu6",    "Sin",     "Cos"}; /* no Erfc op is defined yet */
  double (*refs[])(double) = {
      ref_exp,  ref_log,        ref_tanh,     ref_sigmoid,    ref_expm1,  ref_log1p, ref_erf,
      ref_softplus, ref_elu,    ref_selu,     ref_sqrt,       ref_rsqrt,  ref_reciprocal,
      ref_softsign, ref_square, ref_neg,      ref_abs,        ref_relu,   ref_relu6, ref_sin,
      ref_cos};
  float xs[N];
  for (int i = 0; i < N; i++) xs[i] = (float)(i - N / 2) * 0.05f + 0.001f;
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
    /* 3 ulp, or the function's own bound where that is wider (Tanh's 8, Sigmoid's 4). */
    double bound = 3;
    for (size_t c = 0; c < G_N_ELEMENTS(fns); c++)
      if (g_ascii_strcasecmp(fns[c].name, ops[k]) == 0 && fns[c].max_ulp > bound)
        bound = fns[c].max_ulp;
    weft_output_t x;
    weft_graph_t *g = graph_with_x(xs, N, &x);
    weft_status_t *st = NULL;
    weft_op_builder_t *b = weft_op_new(g, ops[k], "y");
    weft_op_add_input(b, x);
    OK(weft_op_finish(b, NULL));
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    const char *fetch[] = {"y"};
    weft_tensor_t *out = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
    const float *y = weft_tensor_data(out);
    for (int i = 0; i < N; i++) {
      double want = refs[k]((double)xs[i]);
      if (isnan(want)) {
        g_assert_true(isnan(y[i]));
      } else {
        g_assert_cmpfloat(ulp_error(y[i], want), <=, bound);
      }
    }
    weft_tensor_unref(out);
    weft_session_free(s);
    weft_graph_free(g);
  }
  /* Binary ops (AddV2, and Mul after Neg and Exp: too small to fuse; test_fusion streams the
   * fused kernel) through the same paths. */
  weft_output_t x;
  weft_graph_t *g = graph_with_x(xs, N, &x);
  weft_status_t *st = NULL;
  weft_binary(g, "AddV2", "sum", x, x, &st);
  OK(st);
  weft_output_t e = weft_unary(g, "Exp", "e", weft_unary(g, "Neg", "n", x, &st), &st);
  OK(st);
  weft_output_t prod = weft_binary(g, "Mul", "prod", e, x, &st);
  OK(st);
  weft_unary(g, "Relu", "relu", prod, &st);
  OK(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch[] = {"sum", "prod", "relu"};
  weft_tensor_t *outs[3] = {NULL, NULL, NULL};
  OK(weft_session_run(s, NULL, NULL, 0, fetch, outs, 3, NULL, 0));
  const float *ys = weft_tensor_data(outs[0]), *yp = weft_tensor_data(outs[1]);
  const float *yr = weft_tensor_data(outs[2]);
  for (int i = 0; i < N; i++) {
    g_assert_cmpfloat(ys[i], ==, xs[i] + xs[i]);
    /* Exp's bound (3) and the product's rounding. */
    g_assert_cmpfloat(ulp_error(yp[i], exp(-(double)xs[i]) * xs[i]), <=, 3.5);
    g_assert_cmpfloat(yr[i], ==, yp[i] < 0 ? 0.0f : yp[i]);
  }
  for (int k = 0; k < 3; k++) weft_tensor_unref(outs[k]);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_session_levels(void) {
  if (g_getenv("WEFT_TEST_CPU_MATH_CHILD") != NULL) {
    session_child();
    return;
  }
  /* Each level twice: with the default streaming threshold (the cache's size: these small
   * outputs take the plain loops) and with WEFT_CPU_STREAM_BYTES=1024, under which every output
   * here takes the streaming loops. */
  for (int r = 0; r <= 2 * WEFT_CPU_ISA_COUNT; r++) {
    /* The last round asks for a level that does not exist and a threshold that is not a
     * number: a warning for each, then the best level and the cache's size. */
    int k = r / 2;
    const char *isa = k < WEFT_CPU_ISA_COUNT ? weft__cpu_isa_name((weft_cpu_isa_t)k) : "bogus";
    if (k < WEFT_CPU_ISA_COUNT && !weft__cpu_isa_supported((weft_cpu_isa_t)k)) continue;
    g_setenv("WEFT_CPU_ISA", isa, TRUE);
    if (k == WEFT_CPU_ISA_COUNT)
      g_setenv("WEFT_CPU_STREAM_BYTES", "lots", TRUE);
    else if (r % 2 == 1)
      g_setenv("WEFT_CPU_STREAM_BYTES", "1024", TRUE);
    g_setenv("WEFT_TEST_CPU_MATH_CHILD", "1", TRUE);
    g_test_trap_subprocess("/cpu_math/session_levels", 120 * G_USEC_PER_SEC,
                           0);
    g_unsetenv("WEFT_TEST_CPU_MATH_CHILD");
    g_unsetenv("WEFT_CPU_STREAM_BYTES");
    g_unsetenv("WEFT_CPU_ISA");
    g_test_trap_assert_passed();
    if (k == WEFT_CPU_ISA_COUNT) {
      g_test_trap_assert_stderr("*WEFT_CPU_ISA=bogus*");
      g_test_trap_assert_stderr("*WEFT_CPU_STREAM_BYTES=lots is not a byte count*");
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * The float64 Exp, Sigmoid and Tanh of every level, against long double references. */

/* Error of got from want in units of the double ulp at want (denormal spacing below DBL_MIN);
 * NaN against NaN and equal infinities 0. */
static double ulp_error_d(double got, long double want) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : INFINITY;
  if (isinf(got) || want > DBL_MAX || want < -DBL_MAX) {
    long double w = want > DBL_MAX ? INFINITY : (want < -DBL_MAX ? -INFINITY : want);
    return (long double)got == w ? 0 : INFINITY;
  }
  int e;
  frexpl(want, &e);
  long double ulp = ldexpl(1.0L, (e - 53) < -1074 ? -1074 : e - 53);
  return (double)(fabsl((long double)got - want) / ulp);
}

static long double ref_d_exp(long double x) { return expl(x); }
static long double ref_d_sigmoid(long double x) { return 1.0L / (1.0L + expl(-x)); }
static long double ref_d_tanh(long double x) { return tanhl(x); }

typedef struct {
  const char *name;
  long double (*ref)(long double);
  double lo, hi;  /* the sweep's range */
  double max_ulp; /* allowed (cpu_vmath_impl.h, "float64 Exp, Sigmoid and Tanh") */
} fn_d_case_t;

static void test_f64(gconstpointer data) {
  weft_cpu_isa_t isa = (weft_cpu_isa_t)GPOINTER_TO_INT(data);
  if (!weft__cpu_isa_supported(isa)) {
    g_test_skip("this CPU lacks the level");
    return;
  }
  const weft_cpu_vmath_t *vm = weft__cpu_vmath_for(isa);
  static const fn_d_case_t cases[] = {
      {"exp", ref_d_exp, -745.5, 710.0, 2}, {"exp", ref_d_exp, -2, 2, 2},
      {"sigmoid", ref_d_sigmoid, -40, 40, 3}, /* Below -709.78 e^-x overflows and the formula gives 0 (with libm too) where the exact
       * value is a denormal: the sweep stops before. */
      {"sigmoid", ref_d_sigmoid, -709, 746, 3},
      {"tanh", ref_d_tanh, -0.7, 0.7, 3}, {"tanh", ref_d_tanh, -25, 25, 3},
      {"tanh", ref_d_tanh, -1e-3, 1e-3, 3}};
  enum { N = 200003 };
  double *x = g_new(double, N), *y = g_new(double, N);
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const fn_d_case_t *c = &cases[k];
    void (*fn)(const double *, double *, int64_t) =
        strcmp(c->name, "exp") == 0 ? vm->exp_f64
        : strcmp(c->name, "sigmoid") == 0 ? vm->sigmoid_f64 : vm->tanh_f64;
    GRand *r = g_rand_new_with_seed(17 + (guint32)k);
    for (int i = 0; i < N; i++) x[i] = c->lo + (c->hi - c->lo) * ((double)i + g_rand_double(r)) / N;
    g_rand_free(r);
    fn(x, y, N);
    double worst = 0, at = 0;
    for (int i = 0; i < N; i++) {
      double e = ulp_error_d(y[i], c->ref((long double)x[i]));
      if (e > worst) worst = e, at = x[i];
    }
    g_test_message("%s f64 %s on [%g, %g]: max %.3f ulp at %a", weft__cpu_isa_name(isa), c->name,
                   c->lo, c->hi, worst, at);
    if (worst > c->max_ulp)
      g_error("%s f64 %s: %.3f ulp at %a, allowed %.1f", weft__cpu_isa_name(isa), c->name, worst,
              at, c->max_ulp);
  }
  /* Special values, and every tail length, element for element as libm's forms. */
  static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 708.0, 708.5, 709.78,
                                    710.0, -708.0, -708.5, -745.1, -746.0, 1e-300, -1e-300,
                                    0.625, -0.625, 0.6249999999999999, 22.0, 44.0, 1e308};
  int ns = (int)G_N_ELEMENTS(specials);
  for (int len = 1; len <= ns; len++) {
    for (int f = 0; f < 3; f++) {
      void (*fn)(const double *, double *, int64_t) =
          f == 0 ? vm->exp_f64 : f == 1 ? vm->sigmoid_f64 : vm->tanh_f64;
      long double (*ref)(long double) = f == 0 ? ref_d_exp : f == 1 ? ref_d_sigmoid : ref_d_tanh;
      double out[32];
      for (int i = 0; i < 32; i++) out[i] = 12345.0;
      fn(specials, out, len);
      for (int i = 0; i < len; i++) {
        /* The formula's 0 for sigmoid(-746) (above): compared with the formula. */
        long double want = f == 1 && specials[i] < -709.78 ? 0.0L : ref((long double)specials[i]);
        double e = ulp_error_d(out[i], want);
        if (e > 3 || signbit(out[i]) != signbit((double)want))
          g_error("%s f64 fn %d of %a: %a (%.2f ulp)", weft__cpu_isa_name(isa), f, specials[i],
                  out[i], e);
      }
      g_assert_cmpfloat(out[len], ==, 12345.0); /* nothing past n written */
    }
  }
  g_free(x);
  g_free(y);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cpu_math/choose", test_choose);
  g_test_add_func("/cpu_math/stream_choose", test_stream_choose);
  for (int k = 0; k < WEFT_CPU_ISA_COUNT; k++) {
    char *path = g_strdup_printf("/cpu_math/level/%s", weft__cpu_isa_name((weft_cpu_isa_t)k));
    g_test_add_data_func(path, GINT_TO_POINTER(k), test_level);
    g_free(path);
  }
  for (int k = 0; k < WEFT_CPU_ISA_COUNT; k++) {
    char *path = g_strdup_printf("/cpu_math/f64/%s", weft__cpu_isa_name((weft_cpu_isa_t)k));
    g_test_add_data_func(path, GINT_TO_POINTER(k), test_f64);
    g_free(path);
  }
  g_test_add_func("/cpu_math/session_levels", test_session_levels);
  return g_test_run();
}
