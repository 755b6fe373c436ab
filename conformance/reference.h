/* reference.h: the reference implementations weft-conformance compares kernels with, computed in
 * double precision on cf_array_t values and rounded to the output dtype at the end. They follow
 * TensorFlow's documented semantics for each op (integer division truncates for Div and floors
 * for FloorDiv, integers wrap on overflow, NaN propagates through Maximum/Minimum and the
 * reductions, ...). Each returns a new array the caller frees. */
#ifndef WEFT_CONFORMANCE_REFERENCE_H
#define WEFT_CONFORMANCE_REFERENCE_H

#include "conformance.h"

/* ---- reference_elementwise.c: unary and binary elementwise ops with broadcasting ---- */

typedef double (*cf_unary_fn)(double x, weft_dtype_t dtype);
typedef double (*cf_binary_fn)(double x, double y, weft_dtype_t dtype);

/* The reference of a unary op by name (Abs, Exp, Relu, IsNan, ...), or NULL. */
cf_unary_fn cf_ref_unary_fn(const char *op);
/* The reference of a binary op by name (AddV2, FloorMod, Less, LogicalAnd, ...), or NULL. */
cf_binary_fn cf_ref_binary_fn(const char *op);

/* y = fn(x) elementwise, y of dtype out_dtype (rounded). */
cf_array_t *cf_ref_map1(const cf_array_t *x, weft_dtype_t out_dtype, cf_unary_fn fn);
/* z = fn(x, y) with numpy broadcasting; NULL when the shapes do not broadcast. */
cf_array_t *cf_ref_map2(const cf_array_t *x, const cf_array_t *y, weft_dtype_t out_dtype,
                        cf_binary_fn fn);
/* Broadcast shape of a and b; false when they do not broadcast. */
bool cf_broadcast_shapes(int ra, const int64_t *da, int rb, const int64_t *db, int *rank,
                         int64_t *dims);
/* Element offset in an array of shape (r, d) for output index `index` of shape (ro, dout)
 * under broadcasting. */
int64_t cf_broadcast_offset(int64_t index, int ro, const int64_t *dout, int r, const int64_t *d);
/* SelectV2: out = cond ? t : e with all three broadcast. */
cf_array_t *cf_ref_select_v2(const cf_array_t *cond, const cf_array_t *t, const cf_array_t *e);
/* Select (v1): cond a scalar, the shape of t, or a vector over t's first dimension. */
cf_array_t *cf_ref_select(const cf_array_t *cond, const cf_array_t *t, const cf_array_t *e);
/* Copies string values: out[i] = src[index[i]] (strings or numbers). */
void cf_copy_value(cf_array_t *dst, int64_t di, const cf_array_t *src, int64_t si);

/* ---- reference_math.c: products, reductions, scans ---- */

cf_array_t *cf_ref_matmul(const cf_array_t *a, const cf_array_t *b, bool ta, bool tb);
/* BatchMatMulV2 with broadcast batch dims; adj_* transpose the last two dims. */
cf_array_t *cf_ref_batch_matmul(const cf_array_t *a, const cf_array_t *b, bool adj_a, bool adj_b);
/* Sum, Mean, Max, Min, Prod, All, Any over `axes` (may repeat or be negative). */
cf_array_t *cf_ref_reduce(const char *op, const cf_array_t *x, const int64_t *axes, int n_axes,
                          bool keep_dims);
/* ArgMax/ArgMin along axis; out_dtype int32/int64. First index wins ties. */
cf_array_t *cf_ref_argminmax(bool is_max, const cf_array_t *x, int axis, weft_dtype_t out_dtype);
cf_array_t *cf_ref_cumsum(const cf_array_t *x, int axis, bool exclusive, bool reverse);
cf_array_t *cf_ref_addn(cf_array_t *const *xs, int n);

/* ---- reference_nn.c ---- */

/* Softmax or LogSoftmax over the last axis. */
cf_array_t *cf_ref_softmax(const cf_array_t *x, bool log);
/* Softmax over any axis (ONNX semantics helpers use it too). */
cf_array_t *cf_ref_softmax_axis(const cf_array_t *x, int axis, bool log);
cf_array_t *cf_ref_bias_add(const cf_array_t *value, const cf_array_t *bias, bool nchw);
cf_array_t *cf_ref_bias_add_grad(const cf_array_t *grad, bool nchw);
/* SoftmaxCrossEntropyWithLogits: *loss [batch], *backprop [batch, classes]. */
void cf_ref_softmax_xent(const cf_array_t *logits, const cf_array_t *labels, cf_array_t **loss,
                         cf_array_t **backprop);
void cf_ref_sparse_softmax_xent(const cf_array_t *logits, const cf_array_t *labels,
                                cf_array_t **loss, cf_array_t **backprop);
cf_array_t *cf_ref_l2loss(const cf_array_t *x);

/* ---- reference_array.c: data movement ---- */

cf_array_t *cf_ref_transpose(const cf_array_t *x, const int64_t *perm);
cf_array_t *cf_ref_concat(cf_array_t *const *xs, int n, int axis);
cf_array_t *cf_ref_pack(cf_array_t *const *xs, int n, int axis);
/* Output k of Unpack along axis. */
cf_array_t *cf_ref_unpack(const cf_array_t *x, int axis, int64_t k);
/* StridedSlice on the full rank (no masks): per-dim begin, size (number of elements), stride. */
cf_array_t *cf_ref_strided(const cf_array_t *x, const int64_t *begin, const int64_t *size,
                           const int64_t *stride);
cf_array_t *cf_ref_tile(const cf_array_t *x, const int64_t *multiples);
/* Pad with `value` (paddings: rank x 2). mode 0 constant, 1 REFLECT, 2 SYMMETRIC. */
cf_array_t *cf_ref_pad(const cf_array_t *x, const int64_t *paddings, double value, int mode);
/* GatherV2 with batch_dims 0: params along axis by indices (negative indices not allowed). */
cf_array_t *cf_ref_gather(const cf_array_t *params, const cf_array_t *indices, int axis,
                          int batch_dims);
/* Output k of SplitV along axis with the given sizes. */
cf_array_t *cf_ref_split_part(const cf_array_t *x, int axis, int64_t begin, int64_t size);
cf_array_t *cf_ref_one_hot(const cf_array_t *indices, int64_t depth, double on, double off,
                           int axis, weft_dtype_t dtype);
cf_array_t *cf_ref_broadcast_to(const cf_array_t *x, int rank, const int64_t *dims);
cf_array_t *cf_ref_cast(const cf_array_t *x, weft_dtype_t dtype, bool truncate);

/* ---- reference_image.c: convolution and pooling (NHWC or NCHW) ---- */

typedef struct cf_window {
  int64_t ksize[2];   /* window (pooling) or filter spatial size (conv) */
  int64_t stride[2];
  int64_t dilation[2];
  int64_t pad_before[2];
  int64_t pad_after[2];
  bool nchw;
} cf_window_t;

/* Output spatial sizes and explicit paddings for TF padding "SAME"/"VALID" (or keep w's pads for
 * "EXPLICIT"). */
void cf_window_resolve(cf_window_t *w, const char *padding, const int64_t *in_hw);
/* Conv2D: input [N,H,W,C] (or NCHW), filter [KH,KW,C/groups,M]. */
cf_array_t *cf_ref_conv2d(const cf_array_t *input, const cf_array_t *filter, const cf_window_t *w);
/* MaxPool (is_max) or AvgPool; avg divides by the number of in-bounds elements. */
cf_array_t *cf_ref_pool2d(const cf_array_t *input, const cf_window_t *w, bool is_max);
/* MaxPoolGrad (first maximum of each window) / AvgPoolGrad (shared by the in-bounds elements). */
cf_array_t *cf_ref_pool2d_grad(const cf_array_t *input, const cf_array_t *dy,
                               const cf_window_t *w, bool is_max);

/* ---- reference_array_extra.c: ReverseV2, Roll, MatrixDiag, SpaceToBatchND, TopKV2, ... ---- */

cf_array_t *cf_ref_reverse(const cf_array_t *x, const bool *axes);
/* Roll by shift[d] along every dim d (any sign). */
cf_array_t *cf_ref_roll(const cf_array_t *x, const int64_t *shift);
cf_array_t *cf_ref_reverse_sequence(const cf_array_t *x, const int64_t *lens, int seq_dim,
                                    int batch_dim);
/* The MatrixDiag family for diagonals k in [lower, upper]; pad NULL: zeros. super_right and
 * sub_right: the alignment of the super- and subdiagonals (V3's align). */
cf_array_t *cf_ref_matrix_diag(const cf_array_t *diag, int64_t lower, int64_t upper, int64_t rows,
                               int64_t cols, const cf_array_t *pad, bool super_right,
                               bool sub_right);
cf_array_t *cf_ref_matrix_diag_part(const cf_array_t *x, int64_t lower, int64_t upper,
                                    const cf_array_t *pad, bool super_right, bool sub_right);
cf_array_t *cf_ref_matrix_set_diag(const cf_array_t *x, const cf_array_t *diag, int64_t lower,
                                   int64_t upper, bool super_right, bool sub_right);
cf_array_t *cf_ref_band_part(const cf_array_t *x, int64_t lo, int64_t up);
/* pads / crops: [m, 2] as 2m values. */
cf_array_t *cf_ref_space_to_batch(const cf_array_t *x, int m, const int64_t *block,
                                  const int64_t *pads);
cf_array_t *cf_ref_batch_to_space(const cf_array_t *x, int m, const int64_t *block,
                                  const int64_t *crops);
/* SpaceToDepth (to_depth) or DepthToSpace, NHWC. */
cf_array_t *cf_ref_space_to_depth(const cf_array_t *x, int64_t bs, bool to_depth);
cf_array_t *cf_ref_where(const cf_array_t *x);
cf_array_t *cf_ref_nth_element(const cf_array_t *x, int64_t n, bool reverse);
void cf_ref_top_k(const cf_array_t *x, int64_t k, weft_dtype_t index_type, cf_array_t **values,
                  cf_array_t **indices);
void cf_ref_unique(const cf_array_t *x, weft_dtype_t idx_type, cf_array_t **y, cf_array_t **idx,
                   cf_array_t **count);
cf_array_t *cf_ref_invert_permutation(const cf_array_t *x);
/* ---- reference_nn_extra.c: fused RNN cells, fake quantization, InTopK ---- */

typedef struct cf_lstm_opts {
  double forget_bias, cell_clip; /* cell_clip <= 0: no clipping */
  bool peephole;
  bool ifco;           /* BlockLSTMV2's gate layout (else i, c, f, o) */
  int64_t seq_len_max; /* x of rank 3 (BlockLSTM): steps run; later steps are zero */
} cf_lstm_opts_t;

/* LSTMBlockCell (x [batch, input]) or BlockLSTM(V2) (x [time, batch, input]): the 7 outputs
 * i, cs, f, o, ci, co, h. */
void cf_ref_lstm(const cf_array_t *x, const cf_array_t *cs_prev, const cf_array_t *h_prev,
                 const cf_array_t *w, const cf_array_t *wci, const cf_array_t *wcf,
                 const cf_array_t *wco, const cf_array_t *b, const cf_lstm_opts_t *o,
                 cf_array_t *out[7]);
/* GRUBlockCell: r, u, c, h. */
void cf_ref_gru(const cf_array_t *x, const cf_array_t *h_prev, const cf_array_t *w_ru,
                const cf_array_t *w_c, const cf_array_t *b_ru, const cf_array_t *b_c,
                cf_array_t *out[4]);
/* FakeQuantWithMinMax{Args,Vars,VarsPerChannel} (grad NULL: out[0] only meaningful) or their
 * gradients (grad given: out[0] wrt input, out[1] wrt min, out[2] wrt max). mins/maxs hold one
 * value, or the last dimension's size when per_channel. args: the Args flavour (x * 1/scale). */
void cf_ref_fake_quant(const cf_array_t *x, const cf_array_t *grad, const double *mins,
                       const double *maxs, bool per_channel, int num_bits, bool narrow,
                       bool args, cf_array_t *out[3]);
cf_array_t *cf_ref_in_top_k(const cf_array_t *pred, const cf_array_t *targets, int64_t k);
/* ---- reference_linalg.c: dense linear algebra, per matrix over the leading batch dims ---- */

/* Lu: the packed L\U factors (returned) and *p (idx_type) with gather(x, p) = L U. */
cf_array_t *cf_ref_lu(const cf_array_t *x, weft_dtype_t idx_type, cf_array_t **p);
/* LogMatrixDeterminant's sign and log|det| (empty: 1 and 0; singular: 0 and -inf). */
void cf_ref_slogdet(const cf_array_t *x, cf_array_t **sign, cf_array_t **logdet);
cf_array_t *cf_ref_determinant(const cf_array_t *x); /* sign * exp(log|det|) */
/* NULL when a matrix is exactly singular. */
cf_array_t *cf_ref_matrix_inverse(const cf_array_t *x, bool adjoint);
cf_array_t *cf_ref_matrix_solve(const cf_array_t *m, const cf_array_t *r, bool adjoint);
/* Lower factor from the lower triangle; NaN on the lower triangle when not positive definite. */
cf_array_t *cf_ref_cholesky(const cf_array_t *x);
/* MatrixTriangularSolve with broadcast batch dims; NULL when they do not broadcast. */
cf_array_t *cf_ref_triangular_solve(const cf_array_t *m, const cf_array_t *r, bool lower,
                                    bool adjoint);
/* MatrixSolveLs (fast): least squares (rows >= cols) or minimum norm (rows < cols) solution with
 * Tikhonov regularization l2; zeros for an empty system; NULL when singular. */
cf_array_t *cf_ref_matrix_solve_ls(const cf_array_t *m, const cf_array_t *r, double l2);
/* Qr with Eigen's Householder signs (R[k,k] = -sign(x0) |x|, no reflection for a zero tail). */
void cf_ref_qr(const cf_array_t *x, bool full, cf_array_t **q, cf_array_t **r);

/* ---- reference_svd_misc.c ---- */
/* Svd's s: [..., min(M, N)] in descending order. */
cf_array_t *cf_ref_singular_values(const cf_array_t *x);
cf_array_t *cf_ref_linspace(weft_dtype_t dt, double start, double stop, int64_t num);
cf_array_t *cf_ref_diag(const cf_array_t *x);
cf_array_t *cf_ref_diag_part(const cf_array_t *x);
/* b plus the sparse tensor (indices [nnz, ndims], values [nnz]); duplicates add up. */
cf_array_t *cf_ref_sparse_dense_add(const cf_array_t *ind, const cf_array_t *val,
                                    const cf_array_t *b);

#endif /* WEFT_CONFORMANCE_REFERENCE_H */
