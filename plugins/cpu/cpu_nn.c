/* cpu_nn.c: neural-network kernels that are not plain elementwise maps: BiasAdd (NHWC and
 * NCHW), BiasAddGrad, Softmax, LogSoftmax, the two softmax cross-entropy losses and L2Loss.
 * Softmax-style kernels subtract each row's maximum before exponentiating, so large logits
 * neither overflow nor lose the small probabilities. */
#include <stdlib.h>
#include <tgmath.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_dtype_t bias_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                          WEFT_DT_INT64};

/* ---------------------------------------------------------------------------------------------
 * BiasAdd: value viewed as [outer, C, inner]; NHWC has inner = 1, NCHW has outer = N. */

typedef struct bias_job {
  weft_dtype_t dtype;
  const void *x, *bias;
  void *y;
  int64_t c, inner;
} bias_job_t;

#define BIAS_CASE(DT, T, U)                                                         \
  case DT: {                                                                        \
    const T *restrict bias = (const T *)j->bias;                                    \
    for (int64_t r = b; r < e; r++) {                                               \
      const T *restrict x = (const T *)j->x + r * len;                              \
      T *restrict y = (T *)j->y + r * len;                                          \
      if (j->inner == 1) {                                                          \
        for (int64_t i = 0; i < len; i++) y[i] = (T)((U)x[i] + (U)bias[i]);          \
      } else {                                                                      \
        const T bv = bias[r % j->c];                                                \
        for (int64_t i = 0; i < len; i++) y[i] = (T)((U)x[i] + (U)bv);               \
      }                                                                             \
    }                                                                               \
    break;                                                                          \
  }

/* A task is one row: [C] for NHWC, [inner] of one (n, c) for NCHW. */
static void bias_range(void *arg, int64_t b, int64_t e) {
  const bias_job_t *j = arg;
  int64_t len = j->inner == 1 ? j->c : j->inner;
  switch (j->dtype) {
    BIAS_CASE(WEFT_DT_FLOAT, float, float)
    BIAS_CASE(WEFT_DT_DOUBLE, double, double)
    BIAS_CASE(WEFT_DT_INT32, int32_t, uint32_t)
    BIAS_CASE(WEFT_DT_INT64, int64_t, uint64_t)
    default: break;
  }
}

static weft_status_t *k_bias_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_bias_add_t b;
  WEFT_RETURN_IF_ERROR(weft_pc_bias_add_prepare(ctx, &b));
  const weft_tensor_view_t *x = &b.x;
  if (x->num_elements == 0) return NULL;
  int64_t c = x->dims[b.cdim], inner = 1;
  for (int d = b.cdim + 1; d < x->rank; d++) inner *= x->dims[d];
  bias_job_t j = {x->dtype, x->data, b.bias.data, b.y.data, c, inner};
  int64_t len = inner == 1 ? c : inner;
  weft__cpu_parallel(ctx, x->num_elements / len, len + 5, bias_range, &j);
  return NULL;
}

static weft_status_t *k_bias_add_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &g));
  int cdim;
  bool reduced[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(weft_pc_bias_grad_shape(ctx, &g, &cdim, reduced));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, g.dtype, 1, &g.dims[cdim], &y));
  return weft__cpu_reduce_sum(ctx, &g, reduced, &y);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax and LogSoftmax over the last dim, one row per task. */

typedef struct softmax_job {
  weft_dtype_t dtype;
  bool log;
  const void *x;
  void *y;
  int64_t n;
} softmax_job_t;

#define SOFTMAX_CASE(DT, T)                                              \
  case DT: {                                                             \
    for (int64_t r = b; r < e; r++) {                                    \
      const T *restrict x = (const T *)j->x + r * j->n;                  \
      T *restrict y = (T *)j->y + r * j->n;                              \
      T mx = x[0];                                                       \
      for (int64_t i = 1; i < j->n; i++) mx = x[i] > mx ? x[i] : mx;     \
      double sum = 0;                                                    \
      if (j->log) {                                                      \
        for (int64_t i = 0; i < j->n; i++) sum += exp(x[i] - mx);         \
        T lse = (T)log(sum);                                             \
        for (int64_t i = 0; i < j->n; i++) y[i] = x[i] - mx - lse;       \
      } else {                                                           \
        for (int64_t i = 0; i < j->n; i++) {                             \
          T v = exp(x[i] - mx);                                          \
          y[i] = v;                                                      \
          sum += v;                                                      \
        }                                                                \
        T inv = (T)(1.0 / sum);                                          \
        for (int64_t i = 0; i < j->n; i++) y[i] *= inv;                  \
      }                                                                  \
    }                                                                    \
    break;                                                               \
  }

static void softmax_range(void *arg, int64_t b, int64_t e) {
  const softmax_job_t *j = arg;
  switch (j->dtype) {
    SOFTMAX_CASE(WEFT_DT_FLOAT, float)
    SOFTMAX_CASE(WEFT_DT_DOUBLE, double)
    default: break;
  }
}

/* half and bfloat16 (TensorFlow registers both on CPU): each row is widened to float, run through
 * the float loop and rounded back once, so only the final store loses precision. */
static void softmax_f16_range(void *arg, int64_t b, int64_t e) {
  const softmax_job_t *j = arg;
  float *buf = malloc((size_t)j->n * 2 * sizeof(float));
  if (buf == NULL) return; /* the caller checked that a row fits (see k_softmax) */
  softmax_job_t fj = {WEFT_DT_FLOAT, j->log, buf, buf + j->n, j->n};
  for (int64_t r = b; r < e; r++) {
    weft__cpu_f16_to_float(j->dtype, (const uint16_t *)j->x + r * j->n, buf, j->n);
    softmax_range(&fj, 0, 1);
    weft__cpu_float_to_f16(j->dtype, buf + j->n, (uint16_t *)j->y + r * j->n, j->n);
  }
  free(buf);
}

static weft_status_t *k_softmax(weft_kernel_ctx_t *ctx, void *state) {
  bool log_softmax = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank < 1) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "logits must have >= 1 dimension, got a scalar");
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  int64_t n = x.dims[x.rank - 1];
  if (x.num_elements == 0) return NULL;
  softmax_job_t j = {x.dtype, log_softmax, x.data, y.data, n};
  if (x.dtype == WEFT_DT_HALF || x.dtype == WEFT_DT_BFLOAT16) {
    if ((uint64_t)n > SIZE_MAX / (2 * sizeof(float)))
      return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "softmax row of %lld is too long",
                             (long long)n);
    weft__cpu_parallel(ctx, x.num_elements / n, n * 40, softmax_f16_range, &j);
    return NULL;
  }
  weft__cpu_parallel(ctx, x.num_elements / n, n * 30, softmax_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Cross-entropy losses: per row, loss = logsumexp(x) - sum(labels * x) computed stably, and
 * backprop = softmax(x) - labels. */

typedef struct xent_job {
  weft_dtype_t dtype;
  const void *x, *labels; /* dense labels [rows or 1, n], or sparse int labels [rows] */
  int64_t x_rstride, l_rstride;
  weft_dtype_t label_dtype; /* INT32/INT64 for the sparse op */
  bool sparse;
  void *loss, *backprop;
  int64_t n;
} xent_job_t;

#define XENT_CASE(DT, T)                                                                 \
  case DT: {                                                                             \
    for (int64_t r = b; r < e; r++) {                                                    \
      const T *restrict x = (const T *)j->x + r * j->x_rstride;                          \
      T *restrict bp = (T *)j->backprop + r * j->n;                                      \
      T mx = x[0];                                                                       \
      for (int64_t i = 1; i < j->n; i++) mx = x[i] > mx ? x[i] : mx;                     \
      double sum = 0;                                                                    \
      for (int64_t i = 0; i < j->n; i++) sum += exp((double)(x[i] - mx));                \
      double lse = log(sum);                                                             \
      double loss = 0;                                                                   \
      if (j->sparse) {                                                                   \
        int64_t label = j->label_dtype == WEFT_DT_INT64 ? ((const int64_t *)j->labels)[r] \
                                                         : ((const int32_t *)j->labels)[r]; \
        for (int64_t i = 0; i < j->n; i++)                                               \
          bp[i] = (T)(exp((double)(x[i] - mx)) / sum - (i == label ? 1.0 : 0.0));        \
        loss = lse - (double)(x[label] - mx);                                            \
      } else {                                                                           \
        const T *restrict l = (const T *)j->labels + r * j->l_rstride;                   \
        for (int64_t i = 0; i < j->n; i++) {                                             \
          double logp = (double)(x[i] - mx) - lse;                                       \
          if (l[i] != 0) loss -= (double)l[i] * logp;                                    \
          bp[i] = (T)(exp(logp) - (double)l[i]);                                         \
        }                                                                                \
      }                                                                                  \
      ((T *)j->loss)[r] = (T)loss;                                                       \
    }                                                                                    \
    break;                                                                               \
  }

static void xent_range(void *arg, int64_t b, int64_t e) {
  const xent_job_t *j = arg;
  switch (j->dtype) {
    XENT_CASE(WEFT_DT_FLOAT, float)
    XENT_CASE(WEFT_DT_DOUBLE, double)
    default: break;
  }
}

static xent_job_t xent_job(const weft_pc_xent_t *xe, bool sparse) {
  return (xent_job_t){.dtype = xe->x.dtype,
                      .x = xe->x.data,
                      .labels = xe->labels.data,
                      .x_rstride = xe->x_rstride,
                      .l_rstride = xe->l_rstride,
                      .label_dtype = xe->labels.dtype,
                      .sparse = sparse,
                      .loss = xe->loss.data,
                      .backprop = xe->backprop.data,
                      .n = xe->n};
}

static weft_status_t *k_xent(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_xent_t xe;
  WEFT_RETURN_IF_ERROR(weft_pc_xent_prepare(ctx, &xe));
  if (xe.rows == 0) return NULL;
  if (xe.n == 0) {
    /* No classes: TensorFlow gives NaN losses (log of an empty sum). */
    for (int64_t r = 0; r < xe.rows; r++) {
      if (xe.x.dtype == WEFT_DT_FLOAT) ((float *)xe.loss.data)[r] = NAN;
      else ((double *)xe.loss.data)[r] = NAN;
    }
    return NULL;
  }
  xent_job_t j = xent_job(&xe, false);
  weft__cpu_parallel(ctx, xe.rows, xe.n * 40, xent_range, &j);
  return NULL;
}

static weft_status_t *k_sparse_xent(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_xent_t xe;
  WEFT_RETURN_IF_ERROR(weft_pc_sparse_xent_prepare(ctx, &xe));
  if (xe.rows == 0) return NULL;
  xent_job_t j = xent_job(&xe, true);
  weft__cpu_parallel(ctx, xe.rows, xe.n * 40, xent_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * L2Loss: sum(t^2) / 2 in double, over fixed chunks so the result does not depend on how the
 * pool split the work. */

#define L2_CHUNK 65536

typedef struct l2_job {
  weft_dtype_t dtype;
  const void *x;
  int64_t n;
  double *partial;
} l2_job_t;

static void l2_range(void *arg, int64_t b, int64_t e) {
  const l2_job_t *j = arg;
  for (int64_t c = b; c < e; c++) {
    int64_t lo = c * L2_CHUNK, hi = lo + L2_CHUNK < j->n ? lo + L2_CHUNK : j->n;
    double lanes[8] = {0};
    int64_t i = lo;
    if (j->dtype == WEFT_DT_FLOAT) {
      const float *x = j->x;
      for (; i + 8 <= hi; i += 8)
        for (int k = 0; k < 8; k++) lanes[k] += (double)x[i + k] * (double)x[i + k];
      for (; i < hi; i++) lanes[0] += (double)x[i] * (double)x[i];
    } else {
      const double *x = j->x;
      for (; i + 8 <= hi; i += 8)
        for (int k = 0; k < 8; k++) lanes[k] += x[i + k] * x[i + k];
      for (; i < hi; i++) lanes[0] += x[i] * x[i];
    }
    double s = 0;
    for (int k = 0; k < 8; k++) s += lanes[k];
    j->partial[c] = s;
  }
}

static weft_status_t *k_l2loss(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 0, NULL, &y));
  int64_t chunks = (x.num_elements + L2_CHUNK - 1) / L2_CHUNK;
  double total = 0;
  if (chunks > 0) {
    double *partial = NULL;
    WEFT_RETURN_IF_ERROR(
        H->kernel_scratch(ctx, sizeof(double) * (size_t)chunks, (void **)&partial));
    l2_job_t j = {x.dtype, x.data, x.num_elements, partial};
    weft__cpu_parallel(ctx, chunks, L2_CHUNK * 2, l2_range, &j);
    for (int64_t c = 0; c < chunks; c++) total += partial[c];
  }
  if (x.dtype == WEFT_DT_FLOAT)
    *(float *)y.data = (float)(total / 2);
  else
    *(double *)y.data = total / 2;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int log_marker;

weft_status_t *weft__cpu_register_nn(const weft_registrar_t *reg) {
  const weft_dtype_t *bt = bias_types, *ft = float_types;
  static const weft_dtype_t sft[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF, WEFT_DT_BFLOAT16};
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "BiasAdd", .compute = k_bias_add, .type_attr = "T", .dtypes = bt, .n_dtypes = 4},
      {.op = "BiasAddV1", .compute = k_bias_add, .type_attr = "T", .dtypes = bt, .n_dtypes = 4},
      {.op = "BiasAddGrad", .compute = k_bias_add_grad, .type_attr = "T", .dtypes = bt,
       .n_dtypes = 4},
      {.op = "Softmax", .compute = k_softmax, .type_attr = "T", .dtypes = sft, .n_dtypes = 4},
      {.op = "LogSoftmax", .compute = k_softmax, .type_attr = "T", .dtypes = sft, .n_dtypes = 4,
       .user_data = &log_marker},
      {.op = "SoftmaxCrossEntropyWithLogits", .compute = k_xent, .type_attr = "T", .dtypes = ft,
       .n_dtypes = 2},
      {.op = "SparseSoftmaxCrossEntropyWithLogits", .compute = k_sparse_xent, .type_attr = "T",
       .dtypes = ft, .n_dtypes = 2},
      {.op = "L2Loss", .compute = k_l2loss, .type_attr = "T", .dtypes = ft, .n_dtypes = 2},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
