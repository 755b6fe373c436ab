/* reference_nn.c: double-precision references of the neural-network ops: Softmax and LogSoftmax
 * (over the last axis or any axis), BiasAdd and BiasAddGrad (NHWC and NCHW), the softmax
 * cross-entropy losses with their backprop outputs, and L2Loss. */
#include <math.h>

#include "reference.h"

cf_array_t *cf_ref_softmax_axis(const cf_array_t *x, int axis, bool log_out) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  if (x->n == 0) return y;
  int64_t inner = 1;
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  int64_t len = x->rank ? x->dims[axis] : 1;
  int64_t outer = x->n / (len * inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double mx = -INFINITY;
      for (int64_t k = 0; k < len; k++) {
        double v = x->v[(o * len + k) * inner + in];
        if (v > mx || isnan(v)) mx = v;
      }
      double sum = 0;
      for (int64_t k = 0; k < len; k++) sum += exp(x->v[(o * len + k) * inner + in] - mx);
      for (int64_t k = 0; k < len; k++) {
        int64_t idx = (o * len + k) * inner + in;
        y->v[idx] = log_out ? x->v[idx] - mx - log(sum) : exp(x->v[idx] - mx) / sum;
      }
    }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_softmax(const cf_array_t *x, bool log_out) {
  return cf_ref_softmax_axis(x, x->rank - 1, log_out);
}

cf_array_t *cf_ref_bias_add(const cf_array_t *value, const cf_array_t *bias, bool nchw) {
  cf_array_t *y = cf_array_new_like(value, value->dtype);
  int cdim = nchw ? 1 : value->rank - 1;
  int64_t inner = 1;
  for (int d = cdim + 1; d < value->rank; d++) inner *= value->dims[d];
  int64_t c = value->dims[cdim];
  for (int64_t i = 0; i < value->n; i++) y->v[i] = value->v[i] + bias->v[(i / inner) % c];
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_bias_add_grad(const cf_array_t *grad, bool nchw) {
  int cdim = nchw ? 1 : grad->rank - 1;
  int64_t c = grad->dims[cdim];
  cf_array_t *y = cf_array_new(grad->dtype, 1, &c);
  int64_t inner = 1;
  for (int d = cdim + 1; d < grad->rank; d++) inner *= grad->dims[d];
  for (int64_t i = 0; i < grad->n; i++) y->v[(i / inner) % c] += grad->v[i];
  cf_array_round(y);
  return y;
}

/* loss_b = -sum_c labels * log_softmax(logits); backprop = softmax(logits) - labels. */
void cf_ref_softmax_xent(const cf_array_t *logits, const cf_array_t *labels, cf_array_t **loss,
                         cf_array_t **backprop) {
  int64_t b = logits->dims[0], c = logits->dims[1];
  cf_array_t *lsm = cf_ref_softmax_axis(logits, 1, true);
  /* Unrounded log-softmax: recompute in double for the loss. */
  *loss = cf_array_new(logits->dtype, 1, &b);
  *backprop = cf_array_new_like(logits, logits->dtype);
  for (int64_t i = 0; i < b; i++) {
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < c; k++) mx = fmax(mx, logits->v[i * c + k]);
    for (int64_t k = 0; k < c; k++) sum += exp(logits->v[i * c + k] - mx);
    double l = 0;
    for (int64_t k = 0; k < c; k++) {
      int64_t idx = i * c + k;
      double ls = logits->v[idx] - mx - log(sum);
      double lab = labels->rank == 2 ? labels->v[idx] : (labels->v[i] == (double)k ? 1.0 : 0.0);
      l -= lab * ls;
      (*backprop)->v[idx] = exp(ls) - lab;
    }
    (*loss)->v[i] = l;
  }
  cf_array_free(lsm);
  cf_array_round(*loss);
  cf_array_round(*backprop);
}

void cf_ref_sparse_softmax_xent(const cf_array_t *logits, const cf_array_t *labels,
                                cf_array_t **loss, cf_array_t **backprop) {
  cf_ref_softmax_xent(logits, labels, loss, backprop);
}

cf_array_t *cf_ref_l2loss(const cf_array_t *x) {
  cf_array_t *y = cf_array_new(x->dtype, 0, NULL);
  double s = 0;
  for (int64_t i = 0; i < x->n; i++) s += x->v[i] * x->v[i];
  y->v[0] = s / 2;
  cf_array_round(y);
  return y;
}
