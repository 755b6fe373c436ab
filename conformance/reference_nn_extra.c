/* reference_nn_extra.c: references of the fused recurrent cells (LSTMBlockCell, BlockLSTM(V2),
 * GRUBlockCell), the fake-quantization ops and InTopK, after TensorFlow's lstm_ops.h, gru_ops.h,
 * fake_quant_ops_functor.h and in_topk_op.h. The cells run in double; fake quantization is
 * defined by float arithmetic (the nudged range and the rounding to a step), so its reference
 * repeats those float steps instead of computing in double. */
#include <math.h>
#include <string.h>

#include "reference.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

void cf_ref_lstm(const cf_array_t *x, const cf_array_t *cs_prev, const cf_array_t *h_prev,
                 const cf_array_t *w, const cf_array_t *wci, const cf_array_t *wcf,
                 const cf_array_t *wco, const cf_array_t *b, const cf_lstm_opts_t *o,
                 cf_array_t *out[7]) {
  bool block = x->rank == 3;
  int64_t T = block ? x->dims[0] : 1, B = x->dims[block ? 1 : 0], I = x->dims[block ? 2 : 1];
  int64_t C = cs_prev->dims[1];
  int64_t dims[3] = {T, B, C};
  for (int k = 0; k < 7; k++)
    out[k] = cf_array_new(x->dtype, block ? 3 : 2, block ? dims : dims + 1);
  int64_t steps = block ? o->seq_len_max : 1;
  int64_t oi = 0, oc = o->ifco ? 2 * C : C, of = o->ifco ? C : 2 * C, oo = 3 * C;
  double *g = g_new0(double, 4 * C + 1);
  for (int64_t t = 0; t < steps; t++) {
    for (int64_t r = 0; r < B; r++) {
      for (int64_t j = 0; j < 4 * C; j++) {
        double s = b->v[j];
        for (int64_t q = 0; q < I; q++) s += x->v[(t * B + r) * I + q] * w->v[q * 4 * C + j];
        for (int64_t q = 0; q < C; q++) {
          double hp = t == 0 ? h_prev->v[r * C + q] : out[6]->v[((t - 1) * B + r) * C + q];
          s += hp * w->v[(I + q) * 4 * C + j];
        }
        g[j] = s;
      }
      for (int64_t c = 0; c < C; c++) {
        int64_t e = (t * B + r) * C + c;
        double csp = t == 0 ? cs_prev->v[r * C + c] : out[1]->v[e - B * C];
        double i = sigmoid(g[oi + c] + (o->peephole ? csp * wci->v[c] : 0));
        double ci = tanh(g[oc + c]);
        double f = sigmoid(g[of + c] + o->forget_bias + (o->peephole ? csp * wcf->v[c] : 0));
        double cs = ci * i + csp * f;
        if (o->cell_clip > 0) cs = fmin(fmax(cs, -o->cell_clip), o->cell_clip);
        double co = tanh(cs);
        double og = sigmoid(g[oo + c] + (o->peephole ? cs * wco->v[c] : 0));
        out[0]->v[e] = i;
        out[1]->v[e] = cs;
        out[2]->v[e] = f;
        out[3]->v[e] = og;
        out[4]->v[e] = ci;
        out[5]->v[e] = co;
        out[6]->v[e] = og * co;
      }
    }
  }
  g_free(g);
  for (int k = 0; k < 7; k++) cf_array_round(out[k]);
}

void cf_ref_gru(const cf_array_t *x, const cf_array_t *h_prev, const cf_array_t *w_ru,
                const cf_array_t *w_c, const cf_array_t *b_ru, const cf_array_t *b_c,
                cf_array_t *out[4]) {
  int64_t B = x->dims[0], I = x->dims[1], C = h_prev->dims[1];
  for (int k = 0; k < 4; k++) out[k] = cf_array_new_like(h_prev, x->dtype);
  for (int64_t r = 0; r < B; r++) {
    for (int64_t j = 0; j < 2 * C; j++) {
      double s = b_ru->v[j];
      for (int64_t q = 0; q < I; q++) s += x->v[r * I + q] * w_ru->v[q * 2 * C + j];
      for (int64_t q = 0; q < C; q++) s += h_prev->v[r * C + q] * w_ru->v[(I + q) * 2 * C + j];
      out[j < C ? 0 : 1]->v[r * C + j % C] = sigmoid(s);
    }
    for (int64_t j = 0; j < C; j++) {
      double s = b_c->v[j];
      for (int64_t q = 0; q < I; q++) s += x->v[r * I + q] * w_c->v[q * C + j];
      for (int64_t q = 0; q < C; q++)
        s += h_prev->v[r * C + q] * out[0]->v[r * C + q] * w_c->v[(I + q) * C + j];
      double c = tanh(s), u = out[1]->v[r * C + j];
      out[2]->v[r * C + j] = c;
      out[3]->v[r * C + j] = u * h_prev->v[r * C + j] + (1 - u) * c;
    }
  }
  for (int k = 0; k < 4; k++) cf_array_round(out[k]);
}

/* TensorFlow's Nudge, in float. */
static void nudge(float min, float max, int qmin_i, int qmax_i, float *nmin, float *nmax,
                  float *scale) {
  const float qmin = (float)qmin_i, qmax = (float)qmax_i;
  *scale = (max - min) / (qmax - qmin);
  const float zp_from_min = qmin - min / *scale;
  float zp = zp_from_min < qmin ? qmin : zp_from_min > qmax ? qmax : roundf(zp_from_min);
  *nmin = (qmin - zp) * *scale;
  *nmax = (qmax - zp) * *scale;
}

void cf_ref_fake_quant(const cf_array_t *x, const cf_array_t *grad, const double *mins,
                       const double *maxs, bool per_channel, int num_bits, bool narrow,
                       bool args, cf_array_t *out[3]) {
  int64_t depth = per_channel ? x->dims[x->rank - 1] : 1;
  int qmin = narrow ? 1 : 0, qmax = (1 << num_bits) - 1;
  out[0] = cf_array_new_like(x, WEFT_DT_FLOAT);
  out[1] = cf_array_new(WEFT_DT_FLOAT, per_channel ? 1 : 0, &depth);
  out[2] = cf_array_new(WEFT_DT_FLOAT, per_channel ? 1 : 0, &depth);
  for (int64_t ch = 0; ch < depth; ch++) {
    float mn = (float)mins[ch], mx = (float)maxs[ch], nmin, nmax, scale;
    bool zero = !args && mn == 0.0f && mx == 0.0f;
    nudge(mn, mx, qmin, qmax, &nmin, &nmax, &scale);
    for (int64_t i = ch; i < x->n; i += depth) {
      float v = (float)x->v[i];
      if (grad != NULL) {
        double gv = grad->v[i];
        if (zero) {
          out[0]->v[i] = gv;
          continue;
        }
        out[0]->v[i] = (v >= nmin && v <= nmax) ? gv : 0;
        if (v < nmin) out[1]->v[ch] += gv;
        if (v > nmax) out[2]->v[ch] += gv;
      } else if (zero) {
        out[0]->v[i] = 0;
      } else {
        float c = fmaxf(fminf(v, nmax), nmin) - nmin;
        float q = args ? floorf(c * (1.0f / scale) + 0.5f) : floorf(c / scale + 0.5f);
        out[0]->v[i] = q * scale + nmin;
      }
    }
  }
  for (int k = 0; k < 3; k++) cf_array_round(out[k]);
}

cf_array_t *cf_ref_in_top_k(const cf_array_t *pred, const cf_array_t *targets, int64_t k) {
  int64_t B = pred->dims[0], C = pred->dims[1];
  cf_array_t *y = cf_array_new(WEFT_DT_BOOL, 1, &B);
  for (int64_t r = 0; r < B; r++) {
    int64_t t = (int64_t)targets->v[r];
    const double *row = pred->v + r * C;
    bool ok = t >= 0 && t < C && isfinite(row[t]);
    int64_t more = 0;
    for (int64_t c = 0; ok && c < C; c++) {
      if (!isfinite(row[c])) ok = false;
      else if (row[c] > row[t]) more++;
    }
    y->v[r] = ok && more < k;
  }
  return y;
}
