/* reference_conv.h: the double-precision references of cases_conv.c (reference_conv.c): N-d
 * convolution and its two gradients, 3-D pooling and its gradients, MaxPoolWithArgmax,
 * FusedBatchNorm and LRN and its gradient. */
#ifndef WEFT_CONFORMANCE_REFERENCE_CONV_H
#define WEFT_CONFORMANCE_REFERENCE_CONV_H

#include "reference.h"

/* Geometry over three spatial dims (2-D ops: ns = 2, the first spatial dim is 1). */
typedef struct cf_geom {
  int ns;
  bool cfirst;                 /* NCHW / NCDHW */
  int64_t n, c, oc, groups;    /* batch, input and output channels, filter groups */
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pa[3];
} cf_geom_t;

/* Fills out (and pb/pa for SAME and VALID; EXPLICIT keeps them) from in, k, s, d. */
void cf_geom_resolve(cf_geom_t *g, const char *padding);
/* The dims of a tensor (batch n, spatial sp, channels c) in g's layout; returns the rank. */
int cf_geom_dims(const cf_geom_t *g, int64_t n, const int64_t *sp, int64_t c, int64_t *dims);
/* Filter [k..., c / groups, oc]. */
cf_array_t *cf_ref_conv_nd(const cf_array_t *x, const cf_array_t *f, const cf_geom_t *g);
cf_array_t *cf_ref_conv_nd_backprop_input(const cf_array_t *dy, const cf_array_t *f,
                                          const cf_geom_t *g);
cf_array_t *cf_ref_conv_nd_backprop_filter(const cf_array_t *x, const cf_array_t *dy,
                                           const cf_geom_t *g, int rank, const int64_t *fdims);
cf_array_t *cf_ref_pool_nd(const cf_array_t *x, const cf_geom_t *g, bool is_max);
/* MaxPool3DGrad (dy to each window's first maximum) and AvgPool3DGrad (dy shared by the
 * window's in-bounds elements; x gives only the shape). */
cf_array_t *cf_ref_pool_nd_grad(const cf_array_t *x, const cf_array_t *dy, const cf_geom_t *g,
                                bool is_max);
/* LRNGrad from the forward op's derivative, in x alone. */
cf_array_t *cf_ref_lrn_grad(const cf_array_t *dy, const cf_array_t *x, int64_t radius,
                            double bias, double alpha, double beta);
/* NHWC; argmax int64. */
void cf_ref_max_pool_argmax(const cf_array_t *x, const cf_geom_t *g, bool with_batch,
                            cf_array_t **out, cf_array_t **argmax);
/* p: scale, offset, mean, variance; out: y, batch_mean, batch_variance, reserve 1 and 2. */
void cf_ref_fused_batch_norm(const cf_array_t *x, const cf_array_t *const p[4], bool cfirst,
                             double eps, double factor, bool training, cf_array_t *out[5]);
/* FusedBatchNormGrad*: x_backprop, scale_backprop, offset_backprop from dy, x, scale and the
 * saved (training) or population (inference) mean and variance. */
void cf_ref_fused_batch_norm_grad(const cf_array_t *dy, const cf_array_t *x,
                                  const cf_array_t *scale, const cf_array_t *mean,
                                  const cf_array_t *var, bool cfirst, double eps, bool training,
                                  cf_array_t *out[3]);
cf_array_t *cf_ref_lrn(const cf_array_t *x, int64_t radius, double bias, double alpha,
                       double beta);

#endif /* WEFT_CONFORMANCE_REFERENCE_CONV_H */
