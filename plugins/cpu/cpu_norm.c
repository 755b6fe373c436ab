/* cpu_norm.c: the CPU kernels of the normalization ops FusedBatchNorm, FusedBatchNormV2 and
 * FusedBatchNormV3 and their gradients FusedBatchNormGrad, V2, V3 (training and inference,
 * exponential_avg_factor, NHWC/NCHW and V3's NDHWC/NCDHW), LRN (local response
 * normalization across the depth of NHWC inputs) and its gradient LRNGrad, following
 * tensorflow/core/kernels/fused_batch_norm_op.cc and lrn_op.cc. Sums run in double. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vmath.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * FusedBatchNorm, V2, V3. Training normalizes with the batch mean and the biased batch variance
 * and reports the unbiased variance (n / (n - 1), n the elements per channel), blended with the
 * given mean and variance by exponential_avg_factor; the reserve spaces hold the batch mean and
 * biased variance; V3's reserve_space_3 is a scalar 0 on CPU. Inference uses the given mean and
 * variance and passes them through. */

/* float32 x and statistics: y = x * a[c] + b[c] over rows of `inner` elements of one channel
 * (NCHW: a row per (n, c); NHWC: inner 1, each row of C channels walks a and b), with
 * a = scale / sqrt(var + eps) and b = offset - mean * a per channel, as TensorFlow's CPU kernel
 * folds them; one multiply-add per element instead of a generic load, a divide and a sqrt. */
typedef struct bn_apply_job {
  const float *x;
  float *y;
  const float *a, *b;
  int64_t C, inner;
  bool cfirst;
} bn_apply_job_t;

static void bn_apply_range(void *arg, int64_t begin, int64_t end) {
  const bn_apply_job_t *j = arg;
  for (int64_t r = begin; r < end; r++) {
    if (j->cfirst) {
      const float *restrict x = j->x + r * j->inner;
      float *restrict y = j->y + r * j->inner;
      float a = j->a[r % j->C], b = j->b[r % j->C];
      for (int64_t k = 0; k < j->inner; k++) y[k] = x[k] * a + b;
    } else {
      const float *restrict x = j->x + r * j->C, *restrict a = j->a, *restrict b = j->b;
      float *restrict y = j->y + r * j->C;
      for (int64_t c = 0; c < j->C; c++) y[c] = x[c] * a[c] + b[c];
    }
  }
}

static void bn_apply_f32(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                         const weft_tensor_view_t *y, const weft_tensor_view_t *p,
                         const double *mean, const double *var, double eps, int64_t C,
                         int64_t inner, bool cfirst, float *ab) {
  const float *scale = p[0].data, *offset = p[1].data;
  for (int64_t c = 0; c < C; c++) {
    double a = scale[c] / sqrt(var[c] + eps);
    ab[c] = (float)a;
    ab[C + c] = (float)(offset[c] - mean[c] * a);
  }
  int64_t row = cfirst ? inner : C;
  bn_apply_job_t j = {x->data, y->data, ab, ab + C, C, inner, cfirst};
  /* About half a cycle an element (vectorised) and a few per row: small tensors run inline. */
  weft__cpu_parallel(ctx, x->num_elements / row, row / 2 + 8, bn_apply_range, &j);
}

/* The rank (4 or 5) and channel position data_format gives the batch norm ops. */
static void bn_format(weft_kernel_ctx_t *ctx, int *rank, bool *cfirst) {
  const char *fmt = NULL;
  size_t flen = 0;
  weft_status_t *st = H->attr_string(H->kernel_attrs(ctx), "data_format", &fmt, &flen);
  if (st) {
    H->status_free(st);
    fmt = "NHWC";
  }
  *rank = strlen(fmt) == 5 ? 5 : 4;
  *cfirst = fmt[1] == 'C';
}

static weft_status_t *k_fused_bn(weft_kernel_ctx_t *ctx, void *state) {
  bool v3 = state != NULL;
  weft_tensor_view_t x, p[4], y, o[5];
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  static const char *const names[4] = {"scale", "offset", "mean", "variance"};
  for (int i = 0; i < 4; i++) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i + 1, &p[i]));
  int rank;
  bool cfirst;
  bn_format(ctx, &rank, &cfirst);
  char s[CPU_SHAPE_STR_LEN];
  if (x.rank != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be %d-dimensional%s",
                           rank, weft__cpu_shape_str(x.rank, x.dims, s, sizeof s));
  for (int i = 0; i < 4; i++)
    if (p[i].rank != 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be 1-dimensional%s",
                             i == 2 ? "estimated_mean" : i == 3 ? "estimated_variance" : names[i],
                             weft__cpu_shape_str(p[i].rank, p[i].dims, s, sizeof s));
  bool training = weft__cpu_attr_bool(ctx, "is_training", true);
  double eps = weft__cpu_attr_float(ctx, "epsilon", 0.0001f);
  double factor = weft__cpu_attr_float(ctx, "exponential_avg_factor", 1.0f);
  int64_t C = x.dims[cfirst ? 1 : rank - 1];
  /* The given mean and variance are read in inference and when blending. */
  int checked = !training || factor != 1.0 ? 4 : 2;
  for (int i = 0; i < checked; i++)
    if (p[i].dims[0] != C)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s must have the same number of elements as the channels of x, got "
                             "%lld and %lld", names[i], (long long)p[i].dims[0], (long long)C);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  for (int i = 0; i < 4; i++)
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, i + 1, p[0].dtype, 1, &C, &o[i]));
  if (v3) {
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 5, p[0].dtype, 0, NULL, &o[4]));
    weft__cpu_store_f(o[4].dtype, o[4].data, 0, 0.0);
  }
  weft_dtype_t u = p[0].dtype;
  if (x.num_elements == 0) {
    for (int64_t c = 0; c < C; c++) {
      double m = NAN, v = NAN;
      if (training && factor != 1.0) {
        m = (1 - factor) * weft__cpu_load_f(u, p[2].data, c);
        v = (1 - factor) * weft__cpu_load_f(u, p[3].data, c);
      }
      for (int i = 0; i < 4; i++) weft__cpu_store_f(u, o[i].data, c, i % 2 ? v : m);
    }
    return NULL;
  }
  int64_t inner = 1;
  if (cfirst)
    for (int d = 2; d < rank; d++) inner *= x.dims[d];
  int64_t rest = x.num_elements / C;
  double *mean = NULL, *var = NULL;
  /* The per-channel statistics in double, then a and b of the float32 path (bn_apply_f32). */
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)(3 * C + 1),
                                         (void **)&mean));
  var = mean + C;
#define CH(i) (cfirst ? ((i) / inner) % C : (i) % C)
  if (training) {
    memset(mean, 0, sizeof(double) * (size_t)(2 * C));
    for (int64_t i = 0; i < x.num_elements; i++)
      mean[CH(i)] += weft__cpu_load_f(x.dtype, x.data, i);
    for (int64_t c = 0; c < C; c++) mean[c] /= (double)rest;
    for (int64_t i = 0; i < x.num_elements; i++) {
      double d = weft__cpu_load_f(x.dtype, x.data, i) - mean[CH(i)];
      var[CH(i)] += d * d;
    }
    for (int64_t c = 0; c < C; c++) var[c] /= (double)rest;
  } else {
    for (int64_t c = 0; c < C; c++) {
      mean[c] = weft__cpu_load_f(u, p[2].data, c);
      var[c] = weft__cpu_load_f(u, p[3].data, c);
    }
  }
  if (x.dtype == WEFT_DT_FLOAT && u == WEFT_DT_FLOAT) {
    bn_apply_f32(ctx, &x, &y, p, mean, var, eps, C, inner, cfirst, (float *)(var + C));
  } else {
    for (int64_t i = 0; i < x.num_elements; i++) {
      int64_t c = CH(i);
      double v = (weft__cpu_load_f(x.dtype, x.data, i) - mean[c]) / sqrt(var[c] + eps) *
                     weft__cpu_load_f(u, p[0].data, c) +
                 weft__cpu_load_f(u, p[1].data, c);
      weft__cpu_store_f(y.dtype, y.data, i, v);
    }
  }
#undef CH
  double adjust = (double)rest / (double)(rest > 1 ? rest - 1 : 1);
  for (int64_t c = 0; c < C; c++) {
    double bm = mean[c], bv = var[c];
    if (training) {
      bv = var[c] * adjust;
      if (factor != 1.0) {
        bm = (1 - factor) * weft__cpu_load_f(u, p[2].data, c) + factor * mean[c];
        bv = (1 - factor) * weft__cpu_load_f(u, p[3].data, c) + factor * adjust * var[c];
      }
    }
    weft__cpu_store_f(u, o[0].data, c, bm);
    weft__cpu_store_f(u, o[1].data, c, bv);
    weft__cpu_store_f(u, o[2].data, c, mean[c]);
    weft__cpu_store_f(u, o[3].data, c, var[c]);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * FusedBatchNormGrad, V2, V3. reserve_space_1/2 are what the forward op saved: the batch mean
 * and biased variance in training, the population mean and variance in inference (the gradient
 * function passes those). V3's reserve_space_3 is read by nothing on CPU. Training:
 * dx = scale / sqrt(var + eps)
 *      * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) / (var + eps));
 * inference: dx = dy * scale / sqrt(var + eps). dscale = sum(dy * (x - mean)) / sqrt(var + eps)
 * and doffset = sum(dy) in both. Sums in double. */

static weft_status_t *k_fused_bn_grad(weft_kernel_ctx_t *ctx, void *state) {
  const char *op = state ? "FusedBatchNormGradV3" : "FusedBatchNormGrad";
  weft_tensor_view_t dy, x, p[3], o[5];
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &dy));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &x));
  static const char *const names[3] = {"scale", "reserve_space_1", "reserve_space_2"};
  for (int i = 0; i < 3; i++) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i + 2, &p[i]));
  int rank;
  bool cfirst;
  bn_format(ctx, &rank, &cfirst);
  char s[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  if (x.rank != rank || dy.rank != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "%s: x and y_backprop must be %d-dimensional, got %s and %s", op, rank,
                           weft__cpu_shape_str(x.rank, x.dims, s, sizeof s),
                           weft__cpu_shape_str(dy.rank, dy.dims, s2, sizeof s2));
  for (int d = 0; d < rank; d++)
    if (x.dims[d] != dy.dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: x and y_backprop must have same shape, but x has shape %s and "
                             "y_backprop has shape %s", op,
                             weft__cpu_shape_str(x.rank, x.dims, s, sizeof s),
                             weft__cpu_shape_str(dy.rank, dy.dims, s2, sizeof s2));
  int64_t C = x.dims[cfirst ? 1 : rank - 1];
  for (int i = 0; i < 3; i++)
    if (p[i].rank != 1 || p[i].dims[0] != C)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: %s must have shape [%lld] (the channels of x %s), got %s", op,
                             names[i], (long long)C,
                             weft__cpu_shape_str(x.rank, x.dims, s, sizeof s),
                             weft__cpu_shape_str(p[i].rank, p[i].dims, s2, sizeof s2));
  bool training = weft__cpu_attr_bool(ctx, "is_training", true);
  double eps = weft__cpu_attr_float(ctx, "epsilon", 0.0001f);
  weft_dtype_t u = p[1].dtype;
  int64_t zero = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &o[0]));
  for (int i = 1; i < 3; i++) WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, i, u, 1, &C, &o[i]));
  for (int i = 3; i < 5; i++) WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, i, u, 1, &zero, &o[i]));
  int64_t inner = 1;
  if (cfirst)
    for (int d = 2; d < rank; d++) inner *= x.dims[d];
  int64_t rest = C > 0 ? x.num_elements / C : 0;
  double *sum_dy = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)(2 * C + 1),
                                         (void **)&sum_dy));
  double *sum_dyxc = sum_dy + C;
  memset(sum_dy, 0, sizeof(double) * (size_t)(2 * C));
#define CH(i) (cfirst ? ((i) / inner) % C : (i) % C)
#define MEAN(c) weft__cpu_load_f(u, p[1].data, c)
#define RSTD(c) (1.0 / sqrt(weft__cpu_load_f(u, p[2].data, c) + eps))
  for (int64_t i = 0; i < x.num_elements; i++) {
    int64_t c = CH(i);
    double g = weft__cpu_load_f(dy.dtype, dy.data, i);
    sum_dy[c] += g;
    sum_dyxc[c] += g * (weft__cpu_load_f(x.dtype, x.data, i) - MEAN(c));
  }
  for (int64_t i = 0; i < x.num_elements; i++) {
    int64_t c = CH(i);
    double g = weft__cpu_load_f(dy.dtype, dy.data, i), r = RSTD(c);
    double k = weft__cpu_load_f(p[0].dtype, p[0].data, c) * r, v;
    if (training) {
      double xc = weft__cpu_load_f(x.dtype, x.data, i) - MEAN(c);
      v = k * (g - sum_dy[c] / (double)rest - xc * r * r * sum_dyxc[c] / (double)rest);
    } else {
      v = k * g;
    }
    weft__cpu_store_f(o[0].dtype, o[0].data, i, v);
  }
  for (int64_t c = 0; c < C; c++) {
    weft__cpu_store_f(u, o[1].data, c, sum_dyxc[c] * RSTD(c));
    weft__cpu_store_f(u, o[2].data, c, sum_dy[c]);
  }
#undef CH
#undef MEAN
#undef RSTD
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * LRN: output = input / (bias + alpha * sqr_sum) ^ beta, sqr_sum over the depths within
 * depth_radius of each depth (NHWC, the last dimension). */

/* LRN over rows [b, e) of C channels. Each window's sum of squares runs in double in the same
 * order for every dtype (the squares of its channels in ascending order). float32 then takes y = x * z^-beta with z = bias + alpha * sum rounded
 * to float and the vectorised Pow of cpu_vmath.h (the correctly rounded float power; about 1.5
 * float ulp from the exact result where the double path's libm pow and division had 0.5: a
 * pow per element in double was 20 ns, the whole op's time); the other dtypes keep the double
 * path. */
typedef struct lrn_job {
  const weft_tensor_view_t *x, *y;
  int64_t C, r;
  double bias, alpha, beta;
  const weft_cpu_vmath_t *vm;
} lrn_job_t;

/* float32 rows: the squares in double, then each window's sum as 2r + 1 shifted vector adds
 * (each channel still adds its window's squares in ascending order from 0: the double path's
 * bits), then the power over the row. */
static bool lrn_rows_f32(const lrn_job_t *j, int64_t b, int64_t e) {
  int64_t C = j->C, r = j->r < C ? j->r : C - 1;
  /* Rows of up to 1024 channels on the stack (24 KiB), longer ones on the heap. */
  double sq_stack[2 * 1024];
  float z_stack[2 * 1024];
  double *sq = C <= 1024 ? sq_stack : malloc(sizeof(double) * 2 * (size_t)C);
  float *z = C <= 1024 ? z_stack : malloc(sizeof(float) * 2 * (size_t)C);
  if (!sq || !z) {
    if (sq != sq_stack) free(sq);
    if (z != z_stack) free(z);
    return false;
  }
  double *acc = sq + C;
  float *m = z + C;
  const float neg_beta = (float)-j->beta;
  for (int64_t row = b; row < e; row++) {
    const float *xr = (const float *)j->x->data + row * C;
    float *yr = (float *)j->y->data + row * C;
    for (int64_t c = 0; c < C; c++) {
      sq[c] = (double)xr[c] * xr[c];
      acc[c] = 0;
    }
    for (int64_t k = -r; k <= r; k++) {
      int64_t lo = k < 0 ? -k : 0, hi = k > 0 ? C - k : C;
      const double *src = sq + k;
      for (int64_t c = lo; c < hi; c++) acc[c] += src[c];
    }
    for (int64_t c = 0; c < C; c++) z[c] = (float)(j->bias + j->alpha * acc[c]);
    j->vm->pow.vs(z, &neg_beta, m, C);
    for (int64_t c = 0; c < C; c++) yr[c] = xr[c] * m[c];
  }
  if (sq != sq_stack) free(sq);
  if (z != z_stack) free(z);
  return true;
}

static void lrn_rows(void *arg, int64_t b, int64_t e) {
  const lrn_job_t *j = arg;
  /* (Without memory for a long row's buffers, the double path below: 0.5 ulp instead of 1.5.) */
  if (j->x->dtype == WEFT_DT_FLOAT && lrn_rows_f32(j, b, e)) return;
  int64_t C = j->C, r = j->r;
  for (int64_t row = b; row < e; row++)
    for (int64_t c = 0; c < C; c++) {
      int64_t lo = c - r < 0 ? 0 : c - r, hi = c + r >= C ? C - 1 : c + r;
      double sum = 0;
      for (int64_t k = lo; k <= hi; k++) {
        double v = weft__cpu_load_f(j->x->dtype, j->x->data, row * C + k);
        sum += v * v;
      }
      double v = weft__cpu_load_f(j->x->dtype, j->x->data, row * C + c);
      weft__cpu_store_f(j->y->dtype, j->y->data, row * C + c,
                        v / pow(j->bias + j->alpha * sum, j->beta));
    }
}

static weft_status_t *k_lrn(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank != 4) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "in must be 4-dimensional, got %s",
                           weft__cpu_shape_str(x.rank, x.dims, s, sizeof s));
  }
  int64_t r = weft__cpu_attr_int(ctx, "depth_radius", 5);
  if (r > INT_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "depth_radius = %lld larger than int max",
                           (long long)r);
  double bias = weft__cpu_attr_float(ctx, "bias", 1.0f);
  double alpha = weft__cpu_attr_float(ctx, "alpha", 1.0f);
  double beta = weft__cpu_attr_float(ctx, "beta", 0.5f);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 4, x.dims, &y));
  int64_t C = x.dims[3];
  if (y.num_elements == 0) return NULL;
  lrn_job_t j = {&x, &y, C, r, bias, alpha, beta, weft__cpu_vmath()};
  /* Per element: 2r + 1 multiply-adds and a power (about 40 cycles at float32, a libm pow in
   * double otherwise). */
  weft__cpu_parallel(ctx, x.num_elements / C, C * (2 * r + (x.dtype == WEFT_DT_FLOAT ? 40 : 80)),
                     lrn_rows, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * LRNGrad(input_grads dy, input_image x, output_image y): with N_j = bias + alpha * sqr_sum_j,
 * y_j = x_j N_j^-beta, so dy_j/dx_k = [j == k] N_j^-beta - 2 alpha beta x_k y_j / N_j for every
 * depth k within depth_radius of j. Like TensorFlow's kernel it takes y from output_image rather
 * than recomputing it. */

static weft_status_t *k_lrn_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  static const char *const names[] = {"input_grads", "input_image", "output_image"};
  weft_tensor_view_t t[3], dx;
  for (int i = 0; i < 3; i++) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i, &t[i]));
    bool same = t[i].rank == 4;
    for (int d = 0; same && d < 4; d++) same = t[i].dims[d] == t[0].dims[d];
    if (!same) {
      char s[CPU_SHAPE_STR_LEN], s0[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "LRNGrad: %s has shape %s; all three inputs must be 4-dimensional "
                             "and of input_grads' shape %s",
                             names[i], weft__cpu_shape_str(t[i].rank, t[i].dims, s, sizeof s),
                             weft__cpu_shape_str(t[0].rank, t[0].dims, s0, sizeof s0));
    }
  }
  const weft_tensor_view_t *dy = &t[0], *x = &t[1], *y = &t[2];
  int64_t r = weft__cpu_attr_int(ctx, "depth_radius", 5);
  double bias = weft__cpu_attr_float(ctx, "bias", 1.0f);
  double alpha = weft__cpu_attr_float(ctx, "alpha", 1.0f);
  double beta = weft__cpu_attr_float(ctx, "beta", 0.5f);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dy->dtype, 4, dy->dims, &dx));
  int64_t C = dy->dims[3];
  if (dx.num_elements == 0) return NULL;
  double *acc = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)C, (void **)&acc));
  for (int64_t row = 0; row < dx.num_elements / C; row++) {
    const int64_t base = row * C;
    memset(acc, 0, sizeof(double) * (size_t)C);
    for (int64_t j = 0; j < C; j++) {
      int64_t lo = j - r < 0 ? 0 : j - r, hi = j + r >= C ? C - 1 : j + r;
      double sum = 0;
      for (int64_t k = lo; k <= hi; k++) {
        double v = weft__cpu_load_f(x->dtype, x->data, base + k);
        sum += v * v;
      }
      double norm = bias + alpha * sum;
      double g = weft__cpu_load_f(dy->dtype, dy->data, base + j);
      double yj = weft__cpu_load_f(y->dtype, y->data, base + j);
      double common = -2 * alpha * beta * yj / norm * g;
      for (int64_t k = lo; k <= hi; k++)
        acc[k] += common * weft__cpu_load_f(x->dtype, x->data, base + k);
      acc[j] += pow(norm, -beta) * g;
    }
    for (int64_t k = 0; k < C; k++) weft__cpu_store_f(dx.dtype, dx.data, base + k, acc[k]);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration (TensorFlow's CPU kernels: V1 float; V2/V3 float, half and bfloat16 x with float
 * statistics; LRN and LRNGrad float and half). */

static const weft_dtype_t f32[] = {WEFT_DT_FLOAT};
static const weft_dtype_t bn_x_types[] = {WEFT_DT_FLOAT, WEFT_DT_HALF, WEFT_DT_BFLOAT16};
static const weft_dtype_t lrn_types[] = {WEFT_DT_FLOAT, WEFT_DT_HALF};
static int v3_tag; /* user_data != NULL marks V3 (reserve_space_3) */

weft_status_t *weft__cpu_register_norm(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t specs[] = {
      {"FusedBatchNorm", k_fused_bn, "T", f32, 1, NULL, NULL, NULL, NULL},
      {"LRN", k_lrn, "T", lrn_types, 2, NULL, NULL, NULL, NULL},
      {"LRNGrad", k_lrn_grad, "T", lrn_types, 2, NULL, NULL, NULL, NULL},
  };
  WEFT_RETURN_IF_ERROR(weft__cpu_register_specs(reg, specs, 3));
  const weft_type_constraint_t c[] = {{"T", bn_x_types, 3}, {"U", f32, 1}};
  WEFT_RETURN_IF_ERROR(weft__cpu_register_full(reg, "FusedBatchNormV2", c, 2, NULL, NULL,
                                               k_fused_bn, NULL, NULL));
  WEFT_RETURN_IF_ERROR(weft__cpu_register(
      reg, &(weft_cpu_kernel_spec_t){"FusedBatchNormGrad", k_fused_bn_grad, "T", f32, 1, NULL,
                                     NULL, NULL, NULL}));
  WEFT_RETURN_IF_ERROR(weft__cpu_register_full(reg, "FusedBatchNormGradV2", c, 2, NULL, NULL,
                                               k_fused_bn_grad, NULL, NULL));
  WEFT_RETURN_IF_ERROR(weft__cpu_register_full(reg, "FusedBatchNormGradV3", c, 2, NULL, NULL,
                                               k_fused_bn_grad, NULL, &v3_tag));
  return weft__cpu_register_full(reg, "FusedBatchNormV3", c, 2, NULL, NULL, k_fused_bn, NULL,
                                 &v3_tag);
}
