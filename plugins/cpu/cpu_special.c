/* cpu_special.c: CPU kernels of the special functions Digamma, Igamma, Igammac and Betainc with
 * the domains of TensorFlow's (Eigen's) implementations: NaN for a <= 0 or x < 0 (Igamma,
 * Igammac), for a <= 0, b <= 0 or x outside [0, 1] (Betainc), and at Digamma's poles (0 and the
 * negative integers). Every dtype is evaluated in double (series and continued fractions run to
 * double precision) and rounded once to the output dtype. Betainc takes a, b and x of one shape
 * or scalars; Igamma and Igammac broadcast. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

#define PI 3.14159265358979323846
#define MAX_ITER 20000
#define TINY 1e-300

static double digamma(double x) {
  if (isnan(x)) return x;
  if (x <= 0 && floor(x) == x) return NAN; /* the poles, -inf included */
  if (x < 0) return digamma(1 - x) - PI / tan(PI * x); /* reflection */
  double acc = 0;
  while (x < 10) {
    acc -= 1 / x;
    x += 1;
  }
  /* psi(x) ~ ln x - 1/(2x) - sum B2k / (2k x^2k), B2..B12. */
  double x2 = 1 / (x * x);
  double s = 691.0 / 32760;
  s = 1.0 / 132 - x2 * s;
  s = 1.0 / 240 - x2 * s;
  s = 1.0 / 252 - x2 * s;
  s = 1.0 / 120 - x2 * s;
  s = x2 * (1.0 / 12 - x2 * s);
  return acc + log(x) - 1 / (2 * x) - s;
}

/* Regularised lower (lower) or upper incomplete gamma function. */
static double igamma(double a, double x, bool lower) {
  if (isnan(a) || isnan(x)) return NAN;
  if (x < 0 || a <= 0) return NAN;
  if (x == 0) return lower ? 0 : 1;
  if (isinf(x)) return lower ? 1 : 0;
  double log_pref = a * log(x) - x - lgamma(a);
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < MAX_ITER; n++) {
      term *= x / (a + n);
      sum += term;
      if (fabs(term) < fabs(sum) * DBL_EPSILON) break;
    }
    double p = sum * exp(log_pref);
    return lower ? p : 1 - p;
  }
  /* Legendre's continued fraction for the upper function (modified Lentz). */
  double b = x + 1 - a, c = 1 / TINY, d = 1 / b, h = d;
  for (int i = 1; i < MAX_ITER; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < TINY) d = TINY;
    c = b + an / c;
    if (fabs(c) < TINY) c = TINY;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < DBL_EPSILON) break;
  }
  double q = exp(log_pref) * h;
  return lower ? 1 - q : q;
}

/* The incomplete beta function's continued fraction (modified Lentz). */
static double betacf(double a, double b, double x) {
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (fabs(d) < TINY) d = TINY;
  d = 1 / d;
  double h = d;
  for (int m = 1; m < MAX_ITER; m++) {
    int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (fabs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (fabs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (fabs(c) < TINY) c = TINY;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < DBL_EPSILON) break;
  }
  return h;
}

static double betainc(double a, double b, double x) {
  if (isnan(a) || isnan(b) || isnan(x)) return NAN;
  if (a <= 0 || b <= 0) return NAN;
  if (x <= 0 || x >= 1) {
    if (x == 0) return 0;
    if (x == 1) return 1;
    return NAN;
  }
  double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return exp(lbt) * betacf(a, b, x) / a;
  return 1 - exp(lbt) * betacf(b, a, 1 - x) / b;
}

static bool is_float_dtype(weft_dtype_t dt) { return weft__cpu_dtype_is_float(dt); }

/* ---------------------------------------------------------------------------------------------
 * Digamma */

typedef struct un_job {
  weft_dtype_t dt;
  const void *x;
  void *y;
} un_job_t;

static void digamma_range(void *arg, int64_t b, int64_t e) {
  const un_job_t *j = arg;
  for (int64_t i = b; i < e; i++)
    weft__cpu_store_f(j->dt, j->y, i, digamma(weft__cpu_load_f(j->dt, j->x, i)));
}

static weft_status_t *k_digamma(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (!is_float_dtype(x.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "Digamma has no CPU kernel for %s",
                           weft__cpu_dtype_name(x.dtype));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  if (x.num_elements == 0) return NULL;
  un_job_t j = {x.dtype, x.data, y.data};
  weft__cpu_parallel(ctx, x.num_elements, 60, digamma_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Igamma, Igammac (broadcasting) */

typedef struct gamma_job {
  bool lower;
  weft_dtype_t dt;
  const weft_cpu_bcast_t *bc;
  const void *a, *x;
  void *z;
} gamma_job_t;

static void gamma_run(void *arg, const int64_t *off, int64_t pos, int64_t len) {
  const gamma_job_t *j = arg;
  int r = j->bc->rank - 1;
  int64_t sa = j->bc->strides[0][r], sx = j->bc->strides[1][r];
  for (int64_t i = 0; i < len; i++)
    weft__cpu_store_f(j->dt, j->z, pos + i,
                      igamma(weft__cpu_load_f(j->dt, j->a, off[0] + i * sa),
                             weft__cpu_load_f(j->dt, j->x, off[1] + i * sx), j->lower));
}

static void gamma_range(void *arg, int64_t b, int64_t e) {
  const gamma_job_t *j = arg;
  weft__cpu_bcast_runs(j->bc, b, e, gamma_run, arg);
}

static weft_status_t *k_igamma(weft_kernel_ctx_t *ctx, void *state) {
  bool lower = state == NULL;
  const char *name = lower ? "Igamma" : "Igammac";
  weft_tensor_view_t a, x, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, name, &a, &x));
  if (!is_float_dtype(a.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", name,
                           weft__cpu_dtype_name(a.dtype));
  const weft_tensor_view_t *ins[2] = {&a, &x};
  weft_cpu_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft__cpu_bcast_init(ctx, &bc, 2, ins));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, a.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  gamma_job_t j = {lower, a.dtype, &bc, a.data, x.data, z.data};
  weft__cpu_parallel(ctx, bc.out_elements, 200, gamma_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Betainc: a, b and x each a scalar or the one common shape. */

typedef struct beta_job {
  weft_dtype_t dt;
  const weft_tensor_view_t *in; /* a, b, x */
  void *z;
} beta_job_t;

static void beta_range(void *arg, int64_t b, int64_t e) {
  const beta_job_t *j = arg;
  const weft_tensor_view_t *in = j->in;
  for (int64_t i = b; i < e; i++) {
    double av = weft__cpu_load_f(j->dt, in[0].data, in[0].rank > 0 ? i : 0);
    double bv = weft__cpu_load_f(j->dt, in[1].data, in[1].rank > 0 ? i : 0);
    double xv = weft__cpu_load_f(j->dt, in[2].data, in[2].rank > 0 ? i : 0);
    weft__cpu_store_f(j->dt, j->z, i, betainc(av, bv, xv));
  }
}

static weft_status_t *k_betainc(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], z;
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  static const char *const names[3] = {"a", "b", "x"};
  for (int p = 0; p < 3; p++) {
    if (!is_float_dtype(in[p].dtype) || in[p].dtype != in[0].dtype)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Betainc's a, b and x must have one float dtype, got %s, %s, %s",
                             weft__cpu_dtype_name(in[0].dtype), weft__cpu_dtype_name(in[1].dtype),
                             weft__cpu_dtype_name(in[2].dtype));
    for (int q = p + 1; q < 3; q++) {
      if (in[p].rank == 0 || in[q].rank == 0 || weft_pc_same_shape(&in[p], &in[q])) continue;
      weft_pc_shape_pair_t s;
      weft_pc_shape_pair(&s, &in[p], &in[q]);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Shapes of %s and %s are inconsistent: %s vs. %s", names[p],
                             names[q], s.a, s.b);
    }
  }
  const weft_tensor_view_t *shape = in[0].rank > 0 ? &in[0] : (in[1].rank > 0 ? &in[1] : &in[2]);
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, in[0].dtype, shape, &z));
  if (z.num_elements == 0) return NULL;
  beta_job_t j = {in[0].dtype, in, z.data};
  weft__cpu_parallel(ctx, z.num_elements, 400, beta_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                           WEFT_DT_BFLOAT16};
static const weft_dtype_t f32_f64[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static int upper_marker;

weft_status_t *weft__cpu_register_special(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "Digamma", .compute = k_digamma, .type_attr = "T", .dtypes = float_types,
       .n_dtypes = 4},
      {.op = "Igamma", .compute = k_igamma, .type_attr = "T", .dtypes = float_types,
       .n_dtypes = 4},
      {.op = "Igammac", .compute = k_igamma, .type_attr = "T", .dtypes = float_types,
       .n_dtypes = 4, .user_data = &upper_marker},
      {.op = "Betainc", .compute = k_betainc, .type_attr = "T", .dtypes = f32_f64,
       .n_dtypes = 2},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
