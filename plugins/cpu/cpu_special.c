/* cpu_special.c: CPU kernels of the special functions with the domains of TensorFlow's (Eigen's)
 * implementations: Digamma, Igamma, Igammac, Betainc, Zeta (Hurwitz), Polygamma, Erfinv, Ndtri,
 * BesselI0e, BesselI1e, the zero-guarded Xdivy, Xlogy, Xlog1py and MulNoNan, NextAfter and
 * ApproximateEqual. NaN for a <= 0 or x < 0 (Igamma, Igammac), for a <= 0, b <= 0 or x outside
 * [0, 1] (Betainc), at Digamma's poles (0 and the negative integers), for x < 1 (Zeta) and for a
 * non-integer or negative order (Polygamma). Every dtype is evaluated in double (series,
 * continued fractions and Newton steps run to double precision) and rounded once to the output
 * dtype. Betainc takes a, b and x of one shape or scalars; the other binary ops broadcast. */
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

/* Hurwitz zeta sum_{k>=0} (q+k)^-x, with Eigen's answers off its domain: x == 1 is the pole
 * (inf), x < 1 NaN; q a non-positive integer is a pole of every term series (inf for an even
 * integer x, NaN otherwise), and a negative non-integer q only has a real value for integer x.
 * The first terms are summed directly until q+n is large enough for the Euler-Maclaurin tail
 * (int_a^inf t^-x dt + a^-x / 2 + the Bernoulli corrections) to converge to double precision. */
static double hurwitz_zeta(double x, double q) {
  /* B_2j / (2j)!, j = 1..12. */
  static const double b2j_over_fact[] = {
      1.0 / 12,
      -1.0 / 720,
      1.0 / 30240,
      -1.0 / 1209600,
      1.0 / 47900160,
      -691.0 / 1307674368000.0,
      1.0 / 74724249600.0,
      -3617.0 / 10670622842880000.0,
      43867.0 / 5109094217170944000.0,
      -174611.0 / 802857662698291200000.0,
      77683.0 / 14101100039391805440000.0,
      -236364091.0 / 1693824136731743669452800000.0,
  };
  if (isnan(x) || isnan(q)) return NAN;
  if (x == 1) return INFINITY;
  if (x < 1) return NAN;
  if (q <= 0) {
    if (q == floor(q)) return (x == floor(x) && fmod(x, 2) == 0) ? INFINITY : NAN;
    if (x != floor(x)) return NAN;
  }
  if (isinf(q)) return 0;
  double s = 0, a = q;
  for (int n = 0;; n++, a += 1) {
    /* The tail's corrections shrink like (x / (2 pi a))^2j: wait for a comfortably past x. */
    if (n >= 10 && a >= 10 && 2 * PI * a > x + 30) break;
    double term = pow(a, -x);
    s += term;
    if (fabs(term) <= fabs(s) * DBL_EPSILON * 0.5 && a > 0) return s;
  }
  double ax = pow(a, -x);
  s += a * ax / (x - 1) + ax / 2;
  /* poch = x (x+1) ... (x+2j-2), apow = a^-(x+2j-1). */
  double poch = x, apow = ax / a;
  for (size_t j = 0; j < sizeof b2j_over_fact / sizeof b2j_over_fact[0]; j++) {
    double t = b2j_over_fact[j] * poch * apow;
    s += t;
    if (fabs(t) <= fabs(s) * DBL_EPSILON * 0.5) break;
    poch *= (x + 2 * (double)j + 1) * (x + 2 * (double)j + 2);
    apow /= a * a;
  }
  return s;
}

/* Eigen's polygamma: digamma for n = 0, (-1)^(n+1) n! zeta(n+1, x) for a positive integer n,
 * NaN for any other order. */
static double polygamma(double n, double x) {
  if (isnan(n) || isnan(x)) return NAN;
  if (n < 0 || floor(n) != n) return NAN;
  if (n == 0) return digamma(x);
  double sign = fmod(n, 2) == 0 ? -1 : 1;
  return sign * exp(lgamma(n + 1)) * hurwitz_zeta(n + 1, x);
}

#define TWO_OVER_SQRT_PI 1.12837916709551257390

/* The x with erfc(x) = c for c in (0, 1]: a closed-form first guess (Winitzki's, relative error
 * about 2e-3) polished by Newton steps on log(erfc), which stay relative down to erfc's
 * underflow. erfc(x) e^(x^2) is taken through logs: for denormal c, e^(x^2) alone overflows. */
static double erfc_inv_small(double c) {
  const double k = 0.147;
  double l = log(c) + log(2 - c); /* ln(1 - y^2) for y = 1 - c */
  double t = 2 / (PI * k) + l / 2;
  double x = sqrt(sqrt(t * t - l / k) - t);
  for (int i = 0; i < 8; i++) {
    double e = erfc(x);
    if (e <= 0) break;
    double log_e = log(e), dx = (log_e - log(c)) * exp(log_e + x * x) / TWO_OVER_SQRT_PI;
    x += dx;
    if (fabs(dx) <= fabs(x) * DBL_EPSILON) break;
  }
  return x;
}

/* erfc's inverse on [0, 2]: erfc(-x) = 2 - erfc(x), and 2 - c is exact for c in [1, 2]. */
static double erfc_inv(double c) {
  if (isnan(c) || c < 0 || c > 2) return NAN;
  if (c == 0) return INFINITY;
  if (c == 2) return -INFINITY;
  return c <= 1 ? erfc_inv_small(c) : -erfc_inv_small(2 - c);
}

/* erf's inverse: Newton steps on erf itself near 0, where 1 - |y| would lose y's low bits, and
 * erfc's inverse of 1 - |y| (exact for |y| >= 0.5) elsewhere. */
static double erfinv(double y) {
  if (isnan(y) || fabs(y) > 1) return NAN;
  if (fabs(y) > 0.5) return copysign(erfc_inv(1 - fabs(y)), y);
  if (y == 0) return y;
  double x = y / TWO_OVER_SQRT_PI;
  for (int i = 0; i < 20; i++) {
    double dx = (erf(x) - y) / (TWO_OVER_SQRT_PI * exp(-x * x));
    x -= dx;
    if (fabs(dx) <= fabs(x) * DBL_EPSILON) break;
  }
  return x;
}

/* The standard normal quantile: Phi(x) = erfc(-x / sqrt 2) / 2, and 2p is exact. 0 - (...)
 * rather than a negation, so that p = 1/2 gives +0 as TensorFlow's does. */
static double ndtri(double p) {
  if (isnan(p) || p < 0 || p > 1) return NAN;
  return 0.0 - sqrt(2.0) * erfc_inv(2 * p);
}

/* exp(-|x|) I_nu(x) for nu = 0 or 1: the power series (positive terms, so no cancellation)
 * below |x| = 20, Hankel's asymptotic series above, where its smallest term is below e^-40. */
static double bessel_ie(int nu, double x) {
  if (isnan(x)) return x;
  double ax = fabs(x), s;
  if (ax < 20) {
    double q = ax * ax / 4, term = nu ? ax / 2 : 1;
    s = term;
    for (int k = 1; k < 500; k++) {
      term *= q / ((double)k * (double)(k + nu));
      s += term;
      if (term <= s * DBL_EPSILON * 0.5) break;
    }
    s *= exp(-ax);
  } else if (isinf(ax)) {
    s = 0;
  } else {
    /* a_k = prod_{i<=k} (4 nu^2 - (2i-1)^2) / (k! (8x)^k), with alternating sign. */
    double mu = 4.0 * nu * nu, term = 1, sum = 1, prev = INFINITY;
    for (int k = 1; k < 100; k++) {
      double odd = 2.0 * k - 1;
      term *= -(mu - odd * odd) / (k * 8 * ax);
      if (fabs(term) >= prev) break;
      prev = fabs(term);
      sum += term;
      if (fabs(term) <= fabs(sum) * DBL_EPSILON * 0.5) break;
    }
    s = sum / sqrt(2 * PI * ax);
  }
  return nu && x < 0 ? -s : s;
}

/* ---------------------------------------------------------------------------------------------
 * Unary kernels: y = fn(x) in double, every float dtype */

typedef struct un_op {
  const char *name;
  double (*fn)(double x);
  int64_t cost; /* rough cycles per element */
} un_op_t;

static double bessel_i0e(double x) { return bessel_ie(0, x); }
static double bessel_i1e(double x) { return bessel_ie(1, x); }

static const un_op_t un_digamma = {"Digamma", digamma, 60};
static const un_op_t un_erfinv = {"Erfinv", erfinv, 150};
static const un_op_t un_ndtri = {"Ndtri", ndtri, 150};
static const un_op_t un_i0e = {"BesselI0e", bessel_i0e, 150};
static const un_op_t un_i1e = {"BesselI1e", bessel_i1e, 150};

typedef struct un_job {
  const un_op_t *op;
  weft_dtype_t dt;
  const void *x;
  void *y;
} un_job_t;

static void un_range(void *arg, int64_t b, int64_t e) {
  const un_job_t *j = arg;
  for (int64_t i = b; i < e; i++)
    weft__cpu_store_f(j->dt, j->y, i, j->op->fn(weft__cpu_load_f(j->dt, j->x, i)));
}

static weft_status_t *k_unary(weft_kernel_ctx_t *ctx, void *state) {
  const un_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (!is_float_dtype(x.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(x.dtype));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  if (x.num_elements == 0) return NULL;
  un_job_t j = {op, x.dtype, x.data, y.data};
  weft__cpu_parallel(ctx, x.num_elements, op->cost, un_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Broadcasting binary kernels: z = fn(a, x) in double, every float dtype */

typedef struct bin_op {
  const char *name;
  double (*fn)(double a, double b, weft_dtype_t dt);
  int64_t cost;
} bin_op_t;

static double f_igamma(double a, double x, weft_dtype_t dt) { (void)dt; return igamma(a, x, true); }
static double f_igammac(double a, double x, weft_dtype_t dt) {
  (void)dt;
  return igamma(a, x, false);
}
static double f_zeta(double x, double q, weft_dtype_t dt) { (void)dt; return hurwitz_zeta(x, q); }
static double f_polygamma(double n, double x, weft_dtype_t dt) {
  (void)dt;
  return polygamma(n, x);
}
/* TensorFlow's zero guards: x == 0 gives 0 whatever y is (0, inf or NaN). */
static double f_xdivy(double x, double y, weft_dtype_t dt) { (void)dt; return x == 0 ? 0 : x / y; }
static double f_xlogy(double x, double y, weft_dtype_t dt) {
  (void)dt;
  return x == 0 ? 0 : x * log(y);
}
static double f_xlog1py(double x, double y, weft_dtype_t dt) {
  (void)dt;
  return x == 0 ? 0 : x * log1p(y);
}
static double f_mul_no_nan(double x, double y, weft_dtype_t dt) {
  (void)dt;
  return y == 0 ? 0 : x * y;
}
/* The next value after x1 toward x2 in the dtype's own spacing, not double's. */
static double f_next_after(double x1, double x2, weft_dtype_t dt) {
  return dt == WEFT_DT_FLOAT ? nextafterf((float)x1, (float)x2) : nextafter(x1, x2);
}

static const bin_op_t bin_igamma = {"Igamma", f_igamma, 200};
static const bin_op_t bin_igammac = {"Igammac", f_igammac, 200};
static const bin_op_t bin_zeta = {"Zeta", f_zeta, 400};
static const bin_op_t bin_polygamma = {"Polygamma", f_polygamma, 400};
static const bin_op_t bin_xdivy = {"Xdivy", f_xdivy, 4};
static const bin_op_t bin_xlogy = {"Xlogy", f_xlogy, 25};
static const bin_op_t bin_xlog1py = {"Xlog1py", f_xlog1py, 25};
static const bin_op_t bin_mul_no_nan = {"MulNoNan", f_mul_no_nan, 2};
static const bin_op_t bin_next_after = {"NextAfter", f_next_after, 4};

typedef struct bin_job {
  const bin_op_t *op;
  weft_dtype_t dt;
  const weft_cpu_bcast_t *bc;
  const void *a, *x;
  void *z;
} bin_job_t;

static void bin_run(void *arg, const int64_t *off, int64_t pos, int64_t len) {
  const bin_job_t *j = arg;
  int r = j->bc->rank - 1;
  int64_t sa = j->bc->strides[0][r], sx = j->bc->strides[1][r];
  for (int64_t i = 0; i < len; i++)
    weft__cpu_store_f(j->dt, j->z, pos + i,
                      j->op->fn(weft__cpu_load_f(j->dt, j->a, off[0] + i * sa),
                                weft__cpu_load_f(j->dt, j->x, off[1] + i * sx), j->dt));
}

static void bin_range(void *arg, int64_t b, int64_t e) {
  const bin_job_t *j = arg;
  weft__cpu_bcast_runs(j->bc, b, e, bin_run, arg);
}

static weft_status_t *k_binary(weft_kernel_ctx_t *ctx, void *state) {
  const bin_op_t *op = state;
  weft_tensor_view_t a, x, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, op->name, &a, &x));
  if (!is_float_dtype(a.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(a.dtype));
  const weft_tensor_view_t *ins[2] = {&a, &x};
  weft_cpu_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft__cpu_bcast_init(ctx, &bc, 2, ins));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, a.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  bin_job_t j = {op, a.dtype, &bc, a.data, x.data, z.data};
  weft__cpu_parallel(ctx, bc.out_elements, op->cost, bin_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * ApproximateEqual: |x - y| < tolerance, evaluated in T as TensorFlow's kernel does (the
 * difference and the tolerance rounded to T), on two tensors of one shape. */

typedef struct approx_job {
  weft_dtype_t dt;
  const void *x, *y;
  uint8_t *z;
  double tol;
} approx_job_t;

static double round_to(weft_dtype_t dt, double v) {
  uint64_t slot = 0;
  weft__cpu_store_f(dt, &slot, 0, v);
  return weft__cpu_load_f(dt, &slot, 0);
}

static void approx_range(void *arg, int64_t b, int64_t e) {
  const approx_job_t *j = arg;
  for (int64_t i = b; i < e; i++) {
    double d = round_to(j->dt, weft__cpu_load_f(j->dt, j->x, i) - weft__cpu_load_f(j->dt, j->y, i));
    j->z[i] = fabs(d) < j->tol;
  }
}

static weft_status_t *k_approximate_equal(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, "ApproximateEqual", &x, &y));
  if (!is_float_dtype(x.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "ApproximateEqual has no CPU kernel for %s",
                           weft__cpu_dtype_name(x.dtype));
  if (!weft_pc_same_shape(&x, &y)) {
    weft_pc_shape_pair_t s;
    weft_pc_shape_pair(&s, &x, &y);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "x and y must be of the same shape. x shape: %s. y shape: %s", s.a,
                           s.b);
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, WEFT_DT_BOOL, &x, &z));
  if (x.num_elements == 0) return NULL;
  double tol = round_to(x.dtype, weft__cpu_attr_float(ctx, "tolerance", 1e-5f));
  approx_job_t j = {x.dtype, x.data, y.data, z.data, tol};
  weft__cpu_parallel(ctx, x.num_elements, 4, approx_range, &j);
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

weft_status_t *weft__cpu_register_special(const weft_registrar_t *reg) {
#define UN(op_) \
  {.op = op_.name, .compute = k_unary, .type_attr = "T", .dtypes = float_types, .n_dtypes = 4, \
   .user_data = (void *)&op_}
#define BIN(op_, types, n) \
  {.op = op_.name, .compute = k_binary, .type_attr = "T", .dtypes = types, .n_dtypes = n, \
   .user_data = (void *)&op_}
  const weft_cpu_kernel_spec_t specs[] = {
      UN(un_digamma),
      UN(un_erfinv),
      UN(un_ndtri),
      UN(un_i0e),
      UN(un_i1e),
      BIN(bin_igamma, float_types, 4),
      BIN(bin_igammac, float_types, 4),
      BIN(bin_zeta, f32_f64, 2),
      BIN(bin_polygamma, f32_f64, 2),
      BIN(bin_xdivy, float_types, 4),
      BIN(bin_xlogy, float_types, 4),
      BIN(bin_xlog1py, float_types, 4),
      BIN(bin_mul_no_nan, float_types, 4),
      BIN(bin_next_after, f32_f64, 2),
      {.op = "Betainc", .compute = k_betainc, .type_attr = "T", .dtypes = f32_f64,
       .n_dtypes = 2},
      {.op = "ApproximateEqual", .compute = k_approximate_equal, .type_attr = "T",
       .dtypes = float_types, .n_dtypes = 4},
  };
#undef UN
#undef BIN
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
