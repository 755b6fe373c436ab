/* cpu_nn_extra.c: CPU kernels of TensorFlow's fused recurrent cells (LSTMBlockCell, BlockLSTM,
 * BlockLSTMV2, GRUBlockCell), the fake-quantization ops (FakeQuantWithMinMaxArgs / Vars /
 * VarsPerChannel and their gradients) and InTopK / InTopKV2.
 *
 * The cells follow tensorflow/core/kernels/rnn/lstm_ops.h and gru_ops.h: one GEMM of [x, h_prev]
 * by the weights per step, then the gate nonlinearities. half runs in float (inputs widened,
 * each output rounded once). The fake-quant kernels reproduce fake_quant_ops_functor.h in float
 * arithmetic step by step (the same nudged min/max/scale, the same operation order), because a
 * different rounding of the scale moves values across quantization steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Helpers */

/* A float copy of a float or half tensor; NULL when out of memory. n may be 0. */
static float *to_float(const weft_tensor_view_t *v) {
  float *f = malloc((size_t)(v->num_elements > 0 ? v->num_elements : 1) * sizeof(float));
  if (f == NULL) return NULL;
  if (v->dtype == WEFT_DT_FLOAT)
    memcpy(f, v->data, (size_t)v->num_elements * sizeof(float));
  else
    weft__cpu_f16_to_float(v->dtype, v->data, f, v->num_elements);
  return f;
}

static void from_float(const weft_tensor_view_t *out, int64_t at, const float *src, int64_t n) {
  if (out->dtype == WEFT_DT_FLOAT)
    memcpy((float *)out->data + at, src, (size_t)n * sizeof(float));
  else
    weft__cpu_float_to_f16(out->dtype, src, (uint16_t *)out->data + at, n);
}

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

/* "NAME must be RANKD" as TensorFlow words it. */
static weft_status_t *want_rank(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                const char *name, int rank) {
  if (v->rank == rank) return NULL;
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be %dD, got rank %d", name, rank,
                         v->rank);
}

/* "WHAT: GOT vs. WANT" (TensorFlow's lstm_ops.cc / gru_ops.cc messages). */
static weft_status_t *want_dim(weft_kernel_ctx_t *ctx, int64_t got, int64_t want,
                               const char *what) {
  if (got == want) return NULL;
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s: %lld vs. %lld", what, (long long)got,
                         (long long)want);
}

/* ---------------------------------------------------------------------------------------------
 * LSTM */

typedef struct lstm_params {
  float forget_bias, cell_clip;
  bool peephole;
  bool ifco; /* BlockLSTMV2's gate layout; else i, c, f, o */
  int64_t batch, input, cell;
} lstm_params_t;

/* The gate outputs of one step, each [batch, cell]. */
enum { L_I, L_CS, L_F, L_O, L_CI, L_CO, L_H, L_N };

/* One step (LSTMBlockCellFprop). xh [batch, input + cell] holds x in its first `input` columns;
 * gates is [batch, 4 * cell] scratch. */
static void lstm_step(weft_kernel_ctx_t *ctx, const lstm_params_t *p, float *xh,
                      const float *cs_prev, const float *h_prev, const float *w,
                      const float *wci, const float *wcf, const float *wco, const float *b,
                      float *gates, float *const out[L_N]) {
  int64_t B = p->batch, I = p->input, C = p->cell, K = I + C;
  for (int64_t r = 0; r < B; r++) memcpy(xh + r * K + I, h_prev + r * C, (size_t)C * sizeof(float));
  if (B > 0 && C > 0) {
    if (K > 0) {
      weft__cpu_blas_gemm(ctx, false, false, false, B, 4 * C, K, xh, K, w, 4 * C, gates, 4 * C);
    } else {
      memset(gates, 0, (size_t)(B * 4 * C) * sizeof(float));
    }
  }
  int64_t oi = 0, oc = p->ifco ? 2 * C : C, of = p->ifco ? C : 2 * C, oo = 3 * C;
  for (int64_t r = 0; r < B; r++) {
    const float *g = gates + r * 4 * C;
    for (int64_t c = 0; c < C; c++) {
      int64_t e = r * C + c;
      float csp = cs_prev[e];
      float i = sigmoidf(g[oi + c] + b[oi + c] + (p->peephole ? csp * wci[c] : 0.0f));
      float ci = tanhf(g[oc + c] + b[oc + c]);
      float f = sigmoidf(g[of + c] + b[of + c] + p->forget_bias +
                         (p->peephole ? csp * wcf[c] : 0.0f));
      float cs = ci * i + csp * f;
      if (p->cell_clip > 0.0f) cs = fminf(fmaxf(cs, -p->cell_clip), p->cell_clip);
      float co = tanhf(cs);
      float o = sigmoidf(g[oo + c] + b[oo + c] + (p->peephole ? cs * wco[c] : 0.0f));
      out[L_I][e] = i;
      out[L_CS][e] = cs;
      out[L_F][e] = f;
      out[L_O][e] = o;
      out[L_CI][e] = ci;
      out[L_CO][e] = co;
      out[L_H][e] = o * co;
    }
  }
}

/* LSTMBlockCell (block = false) and BlockLSTM / BlockLSTMV2 (block = true; first input is
 * seq_len_max). */
static weft_status_t *lstm_compute(weft_kernel_ctx_t *ctx, bool block, bool v2) {
  int base = block ? 1 : 0;
  weft_tensor_view_t in[8], out[L_N];
  for (int k = 0; k < 8; k++) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, base + k, &in[k]));
  const weft_tensor_view_t *x = &in[0], *csp = &in[1], *hp = &in[2], *w = &in[3], *b = &in[7];
  lstm_params_t p;
  p.forget_bias = v2 ? 0.0f : weft__cpu_attr_float(ctx, "forget_bias", 1.0f);
  p.cell_clip = weft__cpu_attr_float(ctx, "cell_clip", v2 ? 0.0f : 3.0f);
  p.peephole = weft__cpu_attr_bool(ctx, "use_peephole", false);
  p.ifco = v2;
  int64_t seq_len_max = 1, timelen = 1;
  WEFT_RETURN_IF_ERROR(want_rank(ctx, x, "x", block ? 3 : 2));
  if (block) {
    weft_tensor_view_t sl;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sl));
    if (sl.rank != 0 || sl.dtype != WEFT_DT_INT64)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seq_len_max must be an int64 scalar");
    seq_len_max = ((const int64_t *)sl.data)[0];
    timelen = x->dims[0];
    if (seq_len_max < 0 || seq_len_max > timelen)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "seq_len_max must be in [0, timelen = %lld], got %lld",
                             (long long)timelen, (long long)seq_len_max);
  }
  p.batch = x->dims[block ? 1 : 0];
  p.input = x->dims[block ? 2 : 1];
  WEFT_RETURN_IF_ERROR(want_rank(ctx, csp, "cs_prev", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, hp, "h_prev", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, w, "w", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, b, "b", 1));
  p.cell = csp->dims[1];
  WEFT_RETURN_IF_ERROR(want_dim(ctx, csp->dims[0], p.batch, "cs_prev.dims(0) != batch_size"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, hp->dims[0], p.batch, "h_prev.dims(0) != batch_size"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, hp->dims[1], p.cell, "h_prev.dims(1) != cell_size"));
  WEFT_RETURN_IF_ERROR(
      want_dim(ctx, w->dims[0], p.input + p.cell, "w.dim_size(0) != input_size + cell_size"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, w->dims[1], p.cell * 4, "w.dim_size(1) != cell_size * 4"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, b->dims[0], p.cell * 4, "b.dim_size(0) != cell_size * 4"));
  if (p.peephole) {
    static const char *const names[] = {"wci", "wcf", "wco"};
    for (int k = 0; k < 3; k++) {
      char what[40];
      snprintf(what, sizeof what, "%s.dim_size(0) != cell_size", names[k]);
      WEFT_RETURN_IF_ERROR(want_rank(ctx, &in[4 + k], names[k], 1));
      WEFT_RETURN_IF_ERROR(want_dim(ctx, in[4 + k].dims[0], p.cell, what));
    }
  }
  if (p.batch > INT32_MAX || 4 * p.cell > INT32_MAX || p.input + p.cell > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "LSTM dimensions too large");
  int64_t odims[3] = {timelen, p.batch, p.cell};
  for (int k = 0; k < L_N; k++)
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, k, x->dtype, block ? 3 : 2,
                                          block ? odims : odims + 1, &out[k]));
  int64_t step = p.batch * p.cell, K = p.input + p.cell;
  float *f[8] = {NULL};
  float *xh = malloc((size_t)(p.batch * K + 1) * sizeof(float));
  float *gates = malloc((size_t)(p.batch * 4 * p.cell + 1) * sizeof(float));
  float *res = calloc((size_t)(L_N * step * (timelen > 0 ? timelen : 1) + 1), sizeof(float));
  bool ok = xh != NULL && gates != NULL && res != NULL;
  for (int k = 0; k < 8 && ok; k++) ok = (f[k] = to_float(&in[k])) != NULL;
  if (ok) {
    const float *cs_prev = f[1], *h_prev = f[2];
    for (int64_t t = 0; t < seq_len_max; t++) {
      float *o[L_N];
      for (int k = 0; k < L_N; k++) o[k] = res + ((int64_t)k * timelen + t) * step;
      for (int64_t r = 0; r < p.batch; r++)
        memcpy(xh + r * K, f[0] + (t * p.batch + r) * p.input, (size_t)p.input * sizeof(float));
      lstm_step(ctx, &p, xh, cs_prev, h_prev, f[3], f[4], f[5], f[6], f[7], gates, o);
      cs_prev = o[L_CS];
      h_prev = o[L_H];
    }
    /* Steps past seq_len_max stay zero (TensorFlow zeroes cs and h there). */
    for (int k = 0; k < L_N; k++) from_float(&out[k], 0, res + (int64_t)k * timelen * step,
                                              timelen * step);
  }
  for (int k = 0; k < 8; k++) free(f[k]);
  free(xh);
  free(gates);
  free(res);
  return ok ? NULL : oom(ctx);
}

static weft_status_t *k_lstm_block_cell(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return lstm_compute(ctx, false, false);
}
static weft_status_t *k_block_lstm(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return lstm_compute(ctx, true, false);
}
static weft_status_t *k_block_lstm_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return lstm_compute(ctx, true, true);
}

/* ---------------------------------------------------------------------------------------------
 * GRUBlockCell (gru_ops.h GRUBlockCellFprop):
 *   r, u = sigmoid([x, h_prev] w_ru + b_ru);  c = tanh([x, r .* h_prev] w_c + b_c);
 *   h = u .* h_prev + (1 - u) .* c */

static weft_status_t *k_gru_block_cell(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, hp, wru, wc, bru, bc;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &hp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &wru));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &wc));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 4, &bru));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 5, &bc));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, &x, "x", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, &hp, "h_prev", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, &wru, "w_ru", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, &wc, "w_c", 2));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, &bru, "b_ru", 1));
  WEFT_RETURN_IF_ERROR(want_rank(ctx, &bc, "b_c", 1));
  int64_t B = x.dims[0], I = x.dims[1], C = hp.dims[1], K = I + C;
  WEFT_RETURN_IF_ERROR(want_dim(ctx, hp.dims[0], B, "h_prev.dims(0) != batch_size"));
  WEFT_RETURN_IF_ERROR(
      want_dim(ctx, wru.dims[0], K, "w_ru.dim_size(0) != input_size + cell_size"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, wru.dims[1], C * 2, "w_ru.dim_size(1) != cell_size * 2"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, wc.dims[0], K, "w_c.dim_size(0) != input_size + cell_size"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, wc.dims[1], C, "w_c.dim_size(1) != cell_size"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, bru.dims[0], C * 2, "b_ru.dim_size(0) != cell_size * 2"));
  WEFT_RETURN_IF_ERROR(want_dim(ctx, bc.dims[0], C, "b_c.dim_size(0) != cell_size"));
  if (B > INT32_MAX || 2 * C > INT32_MAX || K > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "GRU dimensions too large");
  weft_tensor_view_t r, u, c, h;
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &hp, &r));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 1, x.dtype, &hp, &u));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 2, x.dtype, &hp, &c));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 3, x.dtype, &hp, &h));
  if (B == 0 || C == 0) return NULL;
  const float *xf = x.data, *hf = hp.data, *b_ru = bru.data, *b_c = bc.data;
  float *rf = r.data, *uf = u.data, *cf = c.data, *yf = h.data;
  float *xh = malloc((size_t)(B * K) * sizeof(float));
  float *ru = malloc((size_t)(B * 2 * C) * sizeof(float));
  if (xh == NULL || ru == NULL) {
    free(xh);
    free(ru);
    return oom(ctx);
  }
  for (int64_t i = 0; i < B; i++) {
    memcpy(xh + i * K, xf + i * I, (size_t)I * sizeof(float));
    memcpy(xh + i * K + I, hf + i * C, (size_t)C * sizeof(float));
  }
  weft__cpu_blas_gemm(ctx, false, false, false, B, 2 * C, K, xh, K, wru.data, 2 * C, ru, 2 * C);
  for (int64_t i = 0; i < B; i++)
    for (int64_t j = 0; j < C; j++) {
      rf[i * C + j] = sigmoidf(ru[i * 2 * C + j] + b_ru[j]);
      uf[i * C + j] = sigmoidf(ru[i * 2 * C + C + j] + b_ru[C + j]);
      xh[i * K + I + j] = hf[i * C + j] * rf[i * C + j];
    }
  weft__cpu_blas_gemm(ctx, false, false, false, B, C, K, xh, K, wc.data, C, cf, C);
  for (int64_t e = 0; e < B * C; e++) {
    int64_t j = e % C;
    cf[e] = tanhf(cf[e] + b_c[j]);
    yf[e] = uf[e] * hf[e] + (1.0f - uf[e]) * cf[e];
  }
  free(xh);
  free(ru);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Fake quantization (fake_quant_ops_functor.h) */

typedef struct nudged {
  float min, max, scale;
} nudged_t;

static nudged_t nudge(float min, float max, int64_t quant_min, int64_t quant_max) {
  const float qmin = (float)quant_min, qmax = (float)quant_max;
  nudged_t n;
  n.scale = (max - min) / (qmax - qmin);
  const float zero_point_from_min = qmin - min / n.scale;
  uint16_t zp;
  if (zero_point_from_min < qmin)
    zp = (uint16_t)quant_min;
  else if (zero_point_from_min > qmax)
    zp = (uint16_t)quant_max;
  else
    zp = (uint16_t)roundf(zero_point_from_min);
  n.min = (qmin - zp) * n.scale;
  n.max = (qmax - zp) * n.scale;
  return n;
}

typedef struct fq_attrs {
  int64_t quant_min, quant_max;
} fq_attrs_t;

static weft_status_t *fq_read_attrs(weft_kernel_ctx_t *ctx, fq_attrs_t *a) {
  int64_t num_bits = weft__cpu_attr_int(ctx, "num_bits", 8);
  if (num_bits < 2 || num_bits > 16)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_bits must be between 2 and 16, inclusive");
  a->quant_min = weft__cpu_attr_bool(ctx, "narrow_range", false) ? 1 : 0;
  a->quant_max = ((int64_t)1 << num_bits) - 1;
  return NULL;
}

/* The Vars flavour: x / scale; min == max == 0 gives zeros. stride/offset walk one channel. */
static void fq_vars_apply(const float *x, float *y, int64_t n, int64_t stride, float min,
                          float max, const fq_attrs_t *a) {
  if (min == 0.0f && max == 0.0f) {
    for (int64_t i = 0; i < n; i++) y[i * stride] = 0.0f;
    return;
  }
  nudged_t nd = nudge(min, max, a->quant_min, a->quant_max);
  for (int64_t i = 0; i < n; i++) {
    float v = fmaxf(fminf(x[i * stride], nd.max), nd.min) - nd.min;
    y[i * stride] = floorf(v / nd.scale + 0.5f) * nd.scale + nd.min;
  }
}

/* The gradient for one channel: into dx, and the sums below min / above max. */
static void fq_grad_apply(const float *g, const float *x, float *dx, int64_t n, int64_t stride,
                          float min, float max, const fq_attrs_t *a, float *dmin, float *dmax) {
  float smin = 0.0f, smax = 0.0f;
  if (min == 0.0f && max == 0.0f) {
    for (int64_t i = 0; i < n; i++) dx[i * stride] = g[i * stride];
  } else {
    nudged_t nd = nudge(min, max, a->quant_min, a->quant_max);
    for (int64_t i = 0; i < n; i++) {
      float v = x[i * stride], gv = g[i * stride];
      dx[i * stride] = (v >= nd.min && v <= nd.max) ? gv : 0.0f;
      if (v < nd.min) smin += gv;
      if (v > nd.max) smax += gv;
    }
  }
  if (dmin != NULL) *dmin = smin;
  if (dmax != NULL) *dmax = smax;
}

static weft_status_t *k_fq_args(weft_kernel_ctx_t *ctx, void *state) {
  bool grad = state != NULL;
  fq_attrs_t a;
  WEFT_RETURN_IF_ERROR(fq_read_attrs(ctx, &a));
  float min = weft__cpu_attr_float(ctx, "min", -6.0f), max = weft__cpu_attr_float(ctx, "max", 6.0f);
  if (!(min < max))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "min has to be smaller than max, was: %g >= %g", (double)min,
                           (double)max);
  weft_tensor_view_t g, x, y;
  if (grad) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &g));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, grad ? 1 : 0, &x));
  if (grad && g.num_elements != x.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "gradient and input must be the same size");
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, WEFT_DT_FLOAT, &x, &y));
  const float *xf = x.data;
  float *yf = y.data;
  nudged_t nd = nudge(min, max, a.quant_min, a.quant_max);
  if (grad) {
    const float *gf = g.data;
    for (int64_t i = 0; i < x.num_elements; i++)
      yf[i] = (xf[i] >= nd.min && xf[i] <= nd.max) ? gf[i] : 0.0f;
    return NULL;
  }
  /* The Args flavour multiplies by the reciprocal scale (FakeQuantWithMinMaxArgsFunctor). */
  const float inv_scale = 1.0f / nd.scale;
  for (int64_t i = 0; i < x.num_elements; i++) {
    float v = fmaxf(fminf(xf[i], nd.max), nd.min) - nd.min;
    yf[i] = floorf(v * inv_scale + 0.5f) * nd.scale + nd.min;
  }
  return NULL;
}

/* FakeQuantWithMinMaxVars(PerChannel)(Gradient). */
static weft_status_t *fq_vars(weft_kernel_ctx_t *ctx, bool per_channel, bool grad) {
  fq_attrs_t a;
  WEFT_RETURN_IF_ERROR(fq_read_attrs(ctx, &a));
  int base = grad ? 1 : 0;
  weft_tensor_view_t g, x, mn, mx;
  if (grad) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &g));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, base, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, base + 1, &mn));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, base + 2, &mx));
  if (grad && g.num_elements != x.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "gradient and input must be the same size");
  int64_t depth = 1;
  if (per_channel) {
    if (x.rank < 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "inputs must be at least 1D, got rank 0");
    depth = x.dims[x.rank - 1];
    if (mn.rank != 1 || mn.dims[0] != depth)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "min has incorrect size, expected %lld was %lld", (long long)depth,
                             (long long)(mn.rank == 1 ? mn.dims[0] : mn.num_elements));
    if (mx.rank != 1 || mx.dims[0] != depth)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "max has incorrect size, expected %lld was %lld", (long long)depth,
                             (long long)(mx.rank == 1 ? mx.dims[0] : mx.num_elements));
  } else {
    if (mn.rank != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "`min` must be rank 0 but is rank %d",
                             mn.rank);
    if (mx.rank != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "`max` must be rank 0 but is rank %d",
                             mx.rank);
  }
  weft_tensor_view_t y, dmin, dmax;
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, WEFT_DT_FLOAT, &x, &y));
  if (grad) {
    WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 1, WEFT_DT_FLOAT, &mn, &dmin));
    WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 2, WEFT_DT_FLOAT, &mx, &dmax));
  }
  const float *xf = x.data, *mnf = mn.data, *mxf = mx.data;
  float *yf = y.data;
  int64_t n = depth > 0 ? x.num_elements / depth : 0;
  for (int64_t ch = 0; ch < depth; ch++) {
    if (grad) {
      fq_grad_apply((const float *)g.data + ch, xf + ch, yf + ch, n, depth, mnf[ch], mxf[ch], &a,
                    (float *)dmin.data + ch, (float *)dmax.data + ch);
    } else {
      fq_vars_apply(xf + ch, yf + ch, n, depth, mnf[ch], mxf[ch], &a);
    }
  }
  return NULL;
}

static weft_status_t *k_fq_vars(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return fq_vars(ctx, false, false);
}
static weft_status_t *k_fq_vars_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return fq_vars(ctx, false, true);
}
static weft_status_t *k_fq_per_channel(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return fq_vars(ctx, true, false);
}
static weft_status_t *k_fq_per_channel_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return fq_vars(ctx, true, true);
}

/* ---------------------------------------------------------------------------------------------
 * InTopK / InTopKV2 (in_topk_op.h): out[b] = target's prediction is finite, every prediction of
 * the row is finite, and fewer than k classes have a strictly larger prediction. An out-of-range
 * target gives false. */

static weft_status_t *k_in_top_k(weft_kernel_ctx_t *ctx, void *state) {
  bool v2 = state != NULL;
  weft_tensor_view_t pred, tgt, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &pred));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &tgt));
  int64_t k;
  if (v2) {
    weft_tensor_view_t kv;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &kv));
    if (kv.rank != 0) {
      char buf[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "k must be 0-D, got shape %s",
                             weft__cpu_shape_str(kv.rank, kv.dims, buf, sizeof buf));
    }
    k = weft__cpu_index_at(&kv, 0);
  } else {
    k = weft__cpu_attr_int(ctx, "k", 0);
  }
  if (pred.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "predictions must be 2-dimensional");
  if (tgt.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "targets must be 1-dimensional");
  if (pred.dims[0] != tgt.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "First dimension of predictions %lld must match length of targets %lld",
                           (long long)pred.dims[0], (long long)tgt.dims[0]);
  int64_t dims = tgt.dims[0];
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_BOOL, 1, &dims, &y));
  int64_t classes = pred.dims[1];
  const float *p = pred.data;
  bool *out = y.data;
  for (int64_t r = 0; r < dims; r++) {
    int64_t t = weft__cpu_index_at(&tgt, r);
    const float *row = p + r * classes;
    bool cannot_say = t < 0 || t >= classes || !isfinite(row[t]);
    int64_t more = 0;
    if (!cannot_say) {
      float tp = row[t];
      for (int64_t c = 0; c < classes; c++) {
        if (!isfinite(row[c])) {
          cannot_say = true;
          break;
        }
        if (row[c] > tp && ++more > k) break;
      }
    }
    out[r] = !cannot_say && more < k;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int marker;

weft_status_t *weft__cpu_register_nn_extra(const weft_registrar_t *reg) {
  static const weft_dtype_t lstm_t[] = {WEFT_DT_FLOAT, WEFT_DT_HALF};
  static const weft_dtype_t f32[] = {WEFT_DT_FLOAT};
  static const weft_dtype_t idx[] = {WEFT_DT_INT32, WEFT_DT_INT64};
  static const char *const hm_seq[] = {"seq_len_max", NULL};
  static const char *const hm_k[] = {"k", NULL};
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "LSTMBlockCell", .compute = k_lstm_block_cell, .type_attr = "T", .dtypes = lstm_t,
       .n_dtypes = 2},
      {.op = "BlockLSTM", .compute = k_block_lstm, .type_attr = "T", .dtypes = lstm_t,
       .n_dtypes = 2, .host_memory = hm_seq},
      {.op = "BlockLSTMV2", .compute = k_block_lstm_v2, .type_attr = "T", .dtypes = lstm_t,
       .n_dtypes = 2, .host_memory = hm_seq},
      {.op = "GRUBlockCell", .compute = k_gru_block_cell, .type_attr = "T", .dtypes = f32,
       .n_dtypes = 1},
      {.op = "FakeQuantWithMinMaxArgs", .compute = k_fq_args},
      {.op = "FakeQuantWithMinMaxArgsGradient", .compute = k_fq_args, .user_data = &marker},
      {.op = "FakeQuantWithMinMaxVars", .compute = k_fq_vars},
      {.op = "FakeQuantWithMinMaxVarsGradient", .compute = k_fq_vars_grad},
      {.op = "FakeQuantWithMinMaxVarsPerChannel", .compute = k_fq_per_channel},
      {.op = "FakeQuantWithMinMaxVarsPerChannelGradient", .compute = k_fq_per_channel_grad},
      {.op = "InTopK", .compute = k_in_top_k, .type_attr = "T", .dtypes = idx, .n_dtypes = 2},
      {.op = "InTopKV2", .compute = k_in_top_k, .type_attr = "T", .dtypes = idx, .n_dtypes = 2,
       .host_memory = hm_k, .user_data = &marker},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
