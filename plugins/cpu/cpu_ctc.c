/* cpu_ctc.c: the CPU kernels of TensorFlow's connectionist temporal classification ops, with its
 * semantics and error messages (tensorflow/core/kernels/ctc_loss_op.cc, ctc_decoder_ops.cc,
 * tensorflow/core/util/ctc/ctc_loss_calculator.h, ctc_beam_search.h):
 *   - CTCLoss: -log p(labels | inputs) per batch entry by the forward-backward recursions in log
 *     space, and its gradient w.r.t. the unnormalised inputs (softmax - posterior occupancy);
 *   - CTCGreedyDecoder: the best class at each step, blanks dropped, repeats merged on request;
 *   - CTCBeamSearchDecoder: TensorFlow's prefix beam search with its default scorer.
 * The blank is the last class. Everything is computed in double whatever T is. */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

static double log_sum_exp(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* n doubles, or NULL when n is negative, too large to count in bytes, or not there. */
static double *alloc_doubles(int64_t n) {
  if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double) - 1) return NULL;
  return malloc(sizeof(double) * (size_t)(n + 1));
}

/* "1,2,3": the first n labels, for messages (truncated to the buffer). */
static const char *join_labels(const int64_t *l, int64_t n, char *buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (int64_t i = 0; i < n && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "", (long long)l[i]);
  return buf;
}

/* ---------------------------------------------------------------------------------------------
 * CTCLoss. The labels come as a sparse [batch, max_label_len] matrix whose rows are the batch
 * entries; each entry's label sequence l becomes l' = blank l1 blank l2 ... blank (U = 2L + 1
 * states) and the recursions run over l' and the entry's sequence_length steps. */

typedef struct ctc_labels {
  int64_t *start; /* entry b's labels are values[start[b] .. start[b + 1]) */
  int64_t *l;     /* entry b's l after preprocessing: l[lstart[b] .. lstart[b] + llen[b]) */
  int64_t *llen;
} ctc_labels_t;

/* TensorFlow's check of the label sparse tensor (sparse::SparseTensor::IndicesValid). */
static weft_status_t *check_label_indices(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *idx,
                                          int64_t batch, int64_t max_len) {
  const int64_t n = idx->dims[0];
  for (int64_t r = 0; r < n; r++) {
    int64_t b = weft__cpu_index_at(idx, 2 * r), t = weft__cpu_index_at(idx, 2 * r + 1);
    if (b < 0 || b >= batch || t < 0 || t >= max_len)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "label SparseTensor is not valid: "
                             "indices[%lld] = [%lld,%lld] is out of bounds: need 0 <= index < "
                             "[%lld,%lld]", (long long)r, (long long)b, (long long)t,
                             (long long)batch, (long long)max_len);
    if (r == 0) continue;
    int64_t pb = weft__cpu_index_at(idx, 2 * r - 2), pt = weft__cpu_index_at(idx, 2 * r - 1);
    if (b < pb || (b == pb && t <= pt))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "label SparseTensor is not valid: "
                             "indices[%lld] = [%lld,%lld] is %s", (long long)r, (long long)b,
                             (long long)t, b == pb && t == pt ? "repeated" :
                             "out of order. Many sparse ops require sorted indices.\n    Use "
                             "`tf.sparse.reorder` to create a correctly ordered copy.\n\n");
  }
  return NULL;
}

/* TensorFlow's PopulateLPrimes: entry b's label sequence, with repeats collapsed on request and
 * everything from the first label >= num_classes - 1 on taken as padding; errors for an empty
 * sequence, a real label after padding, a negative label and too few steps. l receives the
 * sequence, *len its length. */
static weft_status_t *prepare_labels(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *vals,
                                     int64_t from, int64_t to, int64_t b, int64_t num_classes,
                                     int64_t seq_len, bool collapse, bool ignore_longer,
                                     int64_t *l, int64_t *len) {
  char s1[256], s2[256];
  if (to == from)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Labels length is zero in batch %lld",
                           (long long)b);
  int64_t n = 0;
  bool finished = false;
  for (int64_t i = from; i < to; i++) {
    int64_t v = weft__cpu_index_at(vals, i);
    if (i > from && collapse && v == weft__cpu_index_at(vals, i - 1)) continue;
    if (v >= num_classes - 1) {
      finished = true;
    } else if (finished) {
      int64_t *raw = malloc(sizeof(int64_t) * (size_t)(to - from));
      if (!raw) return oom(ctx);
      for (int64_t k = from; k < to; k++) raw[k - from] = weft__cpu_index_at(vals, k);
      weft_status_t *st = weft__cpu_error(
          ctx, WEFT_INVALID_ARGUMENT, "Saw a non-null label (index >= num_classes - 1) following "
          "a null label, batch: %lld num_classes: %lld labels: %s labels seen so far: %s",
          (long long)b, (long long)num_classes, join_labels(raw, to - from, s1, sizeof s1),
          join_labels(l, n, s2, sizeof s2));
      free(raw);
      return st;
    } else {
      l[n++] = v;
    }
  }
  for (int64_t i = 0; i < n; i++)
    if (l[i] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "All labels must be nonnegative "
                             "integers, batch: %lld labels: %s", (long long)b,
                             join_labels(l, n, s1, sizeof s1));
  /* As TensorFlow's, the raw sequence's length (before collapsing) is what must fit. */
  if (!ignore_longer && to - from > seq_len)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Not enough time for target transition "
                           "sequence (required: %lld, available: %lld)%lldYou can turn this "
                           "error into a warning by using the flag "
                           "ignore_longer_outputs_than_inputs", (long long)(to - from),
                           (long long)seq_len, (long long)b);
  *len = n;
  return NULL;
}

/* One batch entry: y [T, C] the softmax of its inputs, lp the label states l' (U of them),
 * alpha and beta [U, T] scratch. Writes its loss and (over its T steps) gradient rows. */
static void ctc_entry(const double *y, int64_t T, int64_t C, const int64_t *lp, int64_t U,
                      bool merge, double *alpha, double *beta, double *loss, double *grad,
                      int64_t grad_stride, double *occ) {
  const int64_t blank = C - 1;
  for (int64_t i = 0; i < U * T; i++) alpha[i] = beta[i] = -INFINITY;
  /* alpha[u, t]: log probability of the paths over steps 0..t that end in state u having
   * emitted l'[0..u]. A state stays only when it is a blank or repeats merge; it skips a blank
   * only between different labels (any labels when repeats do not merge). */
  alpha[0] = log(y[blank]);
  if (U > 1) alpha[1 * T] = log(y[lp[1]]);
  for (int64_t t = 1; t < T; t++) {
    for (int64_t u = 0; u < U; u++) {
      double s = (merge || lp[u] == blank) ? alpha[u * T + t - 1] : -INFINITY;
      if (u > 0) s = log_sum_exp(s, alpha[(u - 1) * T + t - 1]);
      if (u > 1 && lp[u] != blank && !(merge && lp[u] == lp[u - 2]))
        s = log_sum_exp(s, alpha[(u - 2) * T + t - 1]);
      alpha[u * T + t] = s + log(y[t * C + lp[u]]);
    }
  }
  /* beta[u, t]: log probability of completing l' from state u at step t over steps t+1.. */
  beta[(U - 1) * T + T - 1] = 0;
  if (U > 1) beta[(U - 2) * T + T - 1] = 0;
  for (int64_t t = T - 2; t >= 0; t--) {
    for (int64_t u = 0; u < U; u++) {
      double s = -INFINITY;
      if (merge || lp[u] == blank) s = beta[u * T + t + 1] + log(y[(t + 1) * C + lp[u]]);
      if (u + 1 < U)
        s = log_sum_exp(s, beta[(u + 1) * T + t + 1] + log(y[(t + 1) * C + lp[u + 1]]));
      if (u + 2 < U && lp[u] != blank && !(merge && lp[u] == lp[u + 2]))
        s = log_sum_exp(s, beta[(u + 2) * T + t + 1] + log(y[(t + 1) * C + lp[u + 2]]));
      beta[u * T + t] = s;
    }
  }
  double log_p = -INFINITY;
  for (int64_t u = 0; u < U; u++) log_p = log_sum_exp(log_p, alpha[u * T] + beta[u * T]);
  *loss = -log_p;
  for (int64_t t = 0; t < T; t++) {
    double *g = grad + t * grad_stride;
    /* No path at all (the labels need more steps than there are): TensorFlow's gradient is the
     * softmax itself, with an infinite loss. */
    if (log_p == -INFINITY) {
      for (int64_t c = 0; c < C; c++) g[c] = y[t * C + c];
      continue;
    }
    for (int64_t c = 0; c < C; c++) occ[c] = -INFINITY;
    for (int64_t u = 0; u < U; u++)
      occ[lp[u]] = log_sum_exp(occ[lp[u]], alpha[u * T + t] + beta[u * T + t]);
    for (int64_t c = 0; c < C; c++) g[c] = y[t * C + c] - exp(occ[c] - log_p);
  }
}

/* The batch entries [begin, end) of one CTCLoss: each with scratch for the longest entry
 * (y [T, C], gradient [T, C], alpha and beta [U, T], occupancy [C], l' [U]). */
typedef struct ctc_job {
  const weft_tensor_view_t *x, *seq, *loss, *grad;
  const int64_t *start, *l, *llen;
  int64_t batch, C, steps, max_u;
  bool merge, ignore_longer;
  atomic_bool failed; /* a range found no memory for its scratch */
} ctc_job_t;

static void ctc_range(void *arg, int64_t begin, int64_t end) {
  ctc_job_t *j = arg;
  const int64_t C = j->C, steps = j->steps, max_u = j->max_u, batch = j->batch;
  const weft_dtype_t dt = j->x->dtype;
  double *work = alloc_doubles(2 * steps * C + 2 * max_u * steps + C);
  int64_t *lp = malloc(sizeof(int64_t) * (size_t)max_u);
  if (!work || !lp) {
    atomic_store(&j->failed, true);
    end = begin;
  }
  double *y = work, *g = y + steps * C, *alpha = g + steps * C, *beta = alpha + max_u * steps;
  double *occ = beta + max_u * steps;
  for (int64_t b = begin; b < end; b++) {
    const int64_t T = weft__cpu_index_at(j->seq, b), raw_len = j->start[b + 1] - j->start[b];
    /* Zero loss and gradient for an empty sequence, or a too short one when asked to ignore it
     * (TensorFlow's). */
    if (T == 0 || (j->ignore_longer && raw_len > T)) continue;
    for (int64_t t = 0; t < T; t++) {
      const int64_t row = (t * batch + b) * C;
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < C; c++) mx = fmax(mx, weft__cpu_load_f(dt, j->x->data, row + c));
      for (int64_t c = 0; c < C; c++)
        sum += y[t * C + c] = exp(weft__cpu_load_f(dt, j->x->data, row + c) - mx);
      for (int64_t c = 0; c < C; c++) y[t * C + c] /= sum;
    }
    const int64_t L = j->llen[b], U = 2 * L + 1;
    for (int64_t i = 0; i < L; i++) {
      lp[2 * i] = C - 1;
      lp[2 * i + 1] = j->l[j->start[b] + i];
    }
    lp[U - 1] = C - 1;
    double lb;
    ctc_entry(y, T, C, lp, U, j->merge, alpha, beta, &lb, g, C, occ);
    weft__cpu_store_f(dt, j->loss->data, b, lb);
    for (int64_t t = 0; t < T; t++)
      for (int64_t c = 0; c < C; c++)
        weft__cpu_store_f(dt, j->grad->data, (t * batch + b) * C + c, g[t * C + c]);
  }
  free(work);
  free(lp);
}

static weft_status_t *k_ctc_loss(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, idx, vals, seq, loss, grad;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &idx));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &vals));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &seq));
  if (x.rank != 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "inputs is not a 3-Tensor");
  if (seq.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sequence_length is not a vector");
  if (idx.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "labels_indices is not a matrix");
  if (vals.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "labels_values is not a vector");
  const int64_t max_time = x.dims[0], batch = x.dims[1], C = x.dims[2];
  if (C > INT_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_classes cannot exceed max int");
  if (batch != seq.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "len(sequence_length) != batch_size.  "
                           "len(sequence_length):  %lld batch_size: %lld",
                           (long long)seq.dims[0], (long long)batch);
  char s1[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  if (idx.dims[0] != vals.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "labels_indices and labels_values must "
                           "contain the same number of rows, but saw shapes: %s vs. %s",
                           weft__cpu_shape_str(idx.rank, idx.dims, s1, sizeof s1),
                           weft__cpu_shape_str(vals.rank, vals.dims, s2, sizeof s2));
  if (batch == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "batch_size must not be 0");
  if (idx.dims[1] != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "labels_indices must have 2 columns "
                           "([batch, time]), got shape %s",
                           weft__cpu_shape_str(idx.rank, idx.dims, s1, sizeof s1));
  const int64_t n = idx.dims[0];
  int64_t max_len = 0;
  for (int64_t r = 0; r < n; r++) {
    int64_t t = weft__cpu_index_at(&idx, 2 * r + 1);
    if (t >= max_len) max_len = t + (t < INT64_MAX); /* as TensorFlow's: max(index) + 1 */
  }
  WEFT_RETURN_IF_ERROR(check_label_indices(ctx, &idx, batch, max_len));
  for (int64_t b = 0; b < batch; b++)
    if (weft__cpu_index_at(&seq, b) > max_time)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sequence_length(%lld) <= %lld",
                             (long long)b, (long long)max_time);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 1, &batch, &loss));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, x.dtype, 3, x.dims, &grad));
  for (int64_t i = 0; i < batch; i++) weft__cpu_store_f(x.dtype, loss.data, i, 0);
  for (int64_t i = 0; i < x.num_elements; i++) weft__cpu_store_f(x.dtype, grad.data, i, 0);
  for (int64_t b = 0; b < batch; b++)
    if (weft__cpu_index_at(&seq, b) < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seq_len(%lld) < 0", (long long)b);

  const bool collapse = weft__cpu_attr_bool(ctx, "preprocess_collapse_repeated", false);
  const bool merge = weft__cpu_attr_bool(ctx, "ctc_merge_repeated", true);
  const bool ignore_longer = weft__cpu_attr_bool(ctx, "ignore_longer_outputs_than_inputs", false);
  /* start: (batch + 1) row starts; l: n labels; llen: batch lengths (one block). */
  int64_t *start = malloc(sizeof(int64_t) * (size_t)(2 * batch + n + 2));
  if (!start) return oom(ctx);
  int64_t *l = start + batch + 1, *llen = l + n + 1;
  for (int64_t b = 0, r = 0; b <= batch; b++) {
    while (r < n && weft__cpu_index_at(&idx, 2 * r) < b) r++;
    start[b] = r;
  }
  weft_status_t *st = NULL;
  for (int64_t b = 0; b < batch && !st; b++)
    st = prepare_labels(ctx, &vals, start[b], start[b + 1], b, C, weft__cpu_index_at(&seq, b),
                        collapse, ignore_longer, l + start[b], &llen[b]);
  int64_t max_u = 1;
  for (int64_t b = 0; b < batch && !st; b++)
    if (llen[b] * 2 + 1 > max_u) max_u = llen[b] * 2 + 1;
  const int64_t steps = max_time > 0 ? max_time : 1;
  if (!st && (max_u > INT64_MAX / 8 / steps || C > INT64_MAX / 8 / steps)) st = oom(ctx);
  if (!st) {
    /* The entries are independent: split the batch over the intra-op pool, as TensorFlow
     * shards it. A unit costs about the forward-backward's 2 U T log-sum-exps and the softmax
     * and gradient's T C exps. */
    ctc_job_t job = {.x = &x, .seq = &seq, .loss = &loss, .grad = &grad, .start = start,
                     .l = l, .llen = llen, .batch = batch, .C = C, .steps = steps,
                     .max_u = max_u, .merge = merge, .ignore_longer = ignore_longer};
    atomic_init(&job.failed, false);
    weft__cpu_parallel(ctx, batch, 40 * steps * (2 * max_u + C), ctc_range, &job);
    if (atomic_load(&job.failed)) st = oom(ctx);
  }
  free(start);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * The decoders' common checks (TensorFlow's CTCDecodeHelper) and their sparse outputs: path p's
 * sequences go to outputs p (indices [n, 2]), paths + p (values [n]) and 2 paths + p (shape
 * [batch, longest]). */

/* The inputs checked, and the log_probability output [batch, paths] (output 3 paths) made. */
static weft_status_t *decoder_inputs(weft_kernel_ctx_t *ctx, int64_t paths, weft_tensor_view_t *x,
                                     weft_tensor_view_t *seq, weft_tensor_view_t *lp) {
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, seq));
  if (x->rank != 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "inputs is not a 3-Tensor");
  if (x->num_elements == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "inputs must not be empty");
  if (x->dims[0] == 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "max_time is 0");
  if (seq->rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sequence_length is not a vector");
  if (x->dims[1] != seq->dims[0])
    return weft__cpu_error(ctx, WEFT_FAILED_PRECONDITION, "len(sequence_length) != batch_size.  "
                           "len(sequence_length):  %lld batch_size: %lld",
                           (long long)seq->dims[0], (long long)x->dims[1]);
  for (int64_t b = 0; b < x->dims[1]; b++)
    if (weft__cpu_index_at(seq, b) > x->dims[0])
      return weft__cpu_error(ctx, WEFT_FAILED_PRECONDITION, "sequence_length(%lld) <= %lld",
                             (long long)b, (long long)x->dims[0]);
  if (x->dims[2] > INT_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_classes cannot exceed max int");
  int64_t lp_dims[2] = {x->dims[1], paths};
  return weft__cpu_output(ctx, 3 * (int)paths, x->dtype, 2, lp_dims, lp);
}

/* Decoded sequences of one path for every batch entry: entry b's are seqs[off[b] .. off[b+1]). */
static weft_status_t *store_path(weft_kernel_ctx_t *ctx, int paths, int p, int64_t batch,
                                 const int64_t *off, const int64_t *seqs) {
  weft_tensor_view_t ind, val, shp;
  int64_t total = off[batch], dims[2] = {total, 2}, two = 2, longest = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, p, WEFT_DT_INT64, 2, dims, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, paths + p, WEFT_DT_INT64, 1, &total, &val));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2 * paths + p, WEFT_DT_INT64, 1, &two, &shp));
  int64_t *pi = ind.data, *pv = val.data, *ps = shp.data;
  for (int64_t b = 0; b < batch; b++) {
    if (off[b + 1] - off[b] > longest) longest = off[b + 1] - off[b];
    for (int64_t k = off[b]; k < off[b + 1]; k++) {
      pi[2 * k] = b;
      pi[2 * k + 1] = k - off[b];
      pv[k] = seqs[k];
    }
  }
  ps[0] = batch;
  ps[1] = longest;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * CTCGreedyDecoder: the first class of greatest input at each step of the entry's sequence;
 * log_probability is minus the sum of those greatest inputs (TensorFlow's). */

static weft_status_t *k_ctc_greedy(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, seq, lp;
  WEFT_RETURN_IF_ERROR(decoder_inputs(ctx, 1, &x, &seq, &lp));
  const int64_t T = x.dims[0], batch = x.dims[1], C = x.dims[2];
  const int64_t blank_attr = weft__cpu_attr_int(ctx, "blank_index", -1);
  const int64_t blank = blank_attr < 0 ? C + blank_attr : blank_attr;
  if (blank < 0 || blank >= C)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "blank_index expected to be between "
                           "%lld and %lld but was %lld", (long long)-C, (long long)(C - 1),
                           (long long)blank_attr);
  const bool merge = weft__cpu_attr_bool(ctx, "merge_repeated", false);
  /* At most one class per step: T * batch values (sequence lengths are at most T). */
  int64_t *off = malloc(sizeof(int64_t) * (size_t)(batch + 1 + T * batch));
  if (!off) return oom(ctx);
  int64_t *seqs = off + batch + 1, k = 0;
  for (int64_t b = 0; b < batch; b++) {
    off[b] = k;
    double sum = 0;
    int64_t prev = -1;
    for (int64_t t = 0; t < weft__cpu_index_at(&seq, b); t++) {
      const int64_t row = (t * batch + b) * C;
      int64_t best = 0;
      double mx = weft__cpu_load_f(x.dtype, x.data, row);
      for (int64_t c = 1; c < C; c++) {
        double v = weft__cpu_load_f(x.dtype, x.data, row + c);
        if (v > mx) {
          mx = v;
          best = c;
        }
      }
      sum -= mx;
      if (best != blank && !(merge && best == prev)) seqs[k++] = best;
      prev = best;
    }
    weft__cpu_store_f(x.dtype, lp.data, b, sum);
  }
  off[batch] = k;
  weft_status_t *st = store_path(ctx, 1, 0, batch, off, seqs);
  free(off);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * CTCBeamSearchDecoder: TensorFlow's CTCBeamSearchDecoder with its default scorer. The prefixes
 * form a tree (entries in a pool, children found through a hash of (parent, label)); each entry
 * keeps the log probabilities, at the previous step (old) and this one (cur), of its prefix
 * with the path ending in a blank, in its last label, and in total. The beam holds at most
 * beam_width entries. Each step's inputs are used less their maximum, as TensorFlow's, so the
 * log probabilities are relative to the product of the per-step maxima. */

typedef struct beam_prob {
  double total, blank, label;
} beam_prob_t;

typedef struct beam_entry {
  int64_t parent; /* -1: the root */
  int64_t label;  /* -1: the root */
  beam_prob_t old, cur;
  uint64_t stamp; /* when it last entered the beam: ties go to the earlier */
} beam_entry_t;

typedef struct beam {
  beam_entry_t *pool;
  int64_t n_pool, cap_pool;
  int64_t *keys, *vals; /* open addressing, key = parent * C + label, -1 empty */
  int64_t cap_hash, n_hash;
  int64_t *leaves; /* entry indices in the beam */
  int64_t n_leaves, width;
  int64_t C;
  uint64_t clock;
} beam_t;

static const beam_prob_t kZeroProb = {-INFINITY, -INFINITY, -INFINITY};

static bool beam_reserve(beam_t *bm) {
  if (bm->n_pool == bm->cap_pool) {
    int64_t cap = bm->cap_pool ? bm->cap_pool * 2 : 64;
    if ((uint64_t)cap > SIZE_MAX / sizeof(beam_entry_t)) return false;
    beam_entry_t *p = realloc(bm->pool, sizeof(beam_entry_t) * (size_t)cap);
    if (!p) return false;
    bm->pool = p;
    bm->cap_pool = cap;
  }
  if (2 * (bm->n_hash + 1) > bm->cap_hash) {
    int64_t cap = bm->cap_hash ? bm->cap_hash * 2 : 128;
    int64_t *keys = malloc(sizeof(int64_t) * 2 * (size_t)cap);
    if (!keys) return false;
    int64_t *vals = keys + cap;
    for (int64_t i = 0; i < cap; i++) keys[i] = -1;
    for (int64_t i = 0; i < bm->cap_hash; i++) {
      if (bm->keys[i] < 0) continue;
      int64_t h = (int64_t)(((uint64_t)bm->keys[i] * 0x9E3779B97F4A7C15ull) >> 1) & (cap - 1);
      while (keys[h] >= 0) h = (h + 1) & (cap - 1);
      keys[h] = bm->keys[i];
      vals[h] = bm->vals[i];
    }
    free(bm->keys);
    bm->keys = keys;
    bm->vals = vals;
    bm->cap_hash = cap;
  }
  return true;
}

static void beam_reset(beam_t *bm) {
  bm->n_pool = 0;
  bm->n_hash = 0;
  for (int64_t i = 0; i < bm->cap_hash; i++) bm->keys[i] = -1;
  /* The root: probability 1 of the empty prefix, ending in a blank. */
  beam_entry_t *root = &bm->pool[bm->n_pool++];
  root->parent = root->label = -1;
  root->old = kZeroProb;
  root->cur = (beam_prob_t){0, 0, -INFINITY};
  root->stamp = bm->clock++;
  bm->leaves[0] = 0;
  bm->n_leaves = 1;
}

/* Entry parent + label, made (all probabilities zero) when new; -1 when out of memory. */
static int64_t beam_child(beam_t *bm, int64_t parent, int64_t label) {
  if (!beam_reserve(bm)) return -1;
  const int64_t key = parent * bm->C + label;
  int64_t h = (int64_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 1) & (bm->cap_hash - 1);
  while (bm->keys[h] >= 0) {
    if (bm->keys[h] == key) return bm->vals[h];
    h = (h + 1) & (bm->cap_hash - 1);
  }
  const int64_t e = bm->n_pool++;
  bm->keys[h] = key;
  bm->vals[h] = e;
  bm->n_hash++;
  bm->pool[e] = (beam_entry_t){.parent = parent, .label = label, .old = kZeroProb,
                               .cur = kZeroProb};
  return e;
}

/* Whether entry a ranks above b: greater current total, then the earlier stamp. */
static bool beam_better(const beam_t *bm, int64_t a, int64_t b) {
  const beam_entry_t *x = &bm->pool[a], *y = &bm->pool[b];
  if (x->cur.total != y->cur.total) return x->cur.total > y->cur.total;
  return x->stamp < y->stamp;
}

/* The position in leaves of the lowest-ranked entry. */
static int64_t beam_bottom(const beam_t *bm) {
  int64_t w = 0;
  for (int64_t i = 1; i < bm->n_leaves; i++)
    if (beam_better(bm, bm->leaves[w], bm->leaves[i])) w = i;
  return w;
}

/* Sorts leaves best first (insertion sort: the beam is small). */
static void beam_sort(beam_t *bm) {
  for (int64_t i = 1; i < bm->n_leaves; i++) {
    int64_t e = bm->leaves[i], j = i;
    for (; j > 0 && beam_better(bm, e, bm->leaves[j - 1]); j--) bm->leaves[j] = bm->leaves[j - 1];
    bm->leaves[j] = e;
  }
}

/* A candidate for the beam: a nonzero probability that the beam has room for or that beats the
 * lowest entry in it. */
static bool beam_candidate(const beam_t *bm, double total) {
  return total > -INFINITY && (bm->n_leaves < bm->width ||
                               total > bm->pool[bm->leaves[beam_bottom(bm)]].cur.total);
}

/* One step: x the inputs of this step (C of them, blank last); branches scratch for width. */
static bool beam_step(beam_t *bm, const double *x, int64_t *branches) {
  const int64_t C = bm->C, blank = C - 1;
  double mx = -INFINITY;
  for (int64_t c = 0; c < C; c++) mx = x[c] > mx ? x[c] : mx;
  beam_sort(bm);
  const int64_t nb = bm->n_leaves;
  memcpy(branches, bm->leaves, sizeof(int64_t) * (size_t)nb);
  bm->n_leaves = 0;
  for (int64_t i = 0; i < nb; i++) bm->pool[branches[i]].old = bm->pool[branches[i]].cur;
  /* Extend each prefix in place: by its own last label (from the same prefix ending in that
   * label, or the parent's paths -- those ending in a blank when the label repeats) or by a
   * blank. */
  for (int64_t i = 0; i < nb; i++) {
    beam_entry_t *e = &bm->pool[branches[i]];
    if (e->parent >= 0) {
      const beam_entry_t *p = &bm->pool[e->parent];
      if (p->cur.total != -INFINITY) {
        double prev = e->label == p->label ? p->old.blank : p->old.total;
        e->cur.label = log_sum_exp(e->cur.label, prev);
      }
      e->cur.label += x[e->label] - mx;
    }
    e->cur.blank = e->old.total + x[blank] - mx;
    e->cur.total = log_sum_exp(e->cur.blank, e->cur.label);
    e->stamp = bm->clock++;
    bm->leaves[bm->n_leaves++] = branches[i];
  }
  /* Grow new prefixes, best parents first, each a candidate only while it can enter the beam. */
  for (int64_t i = 0; i < nb; i++) {
    const int64_t bi = branches[i];
    if (!beam_candidate(bm, bm->pool[bi].old.total)) continue;
    for (int64_t label = 0; label < C - 1; label++) {
      const int64_t ci = beam_child(bm, bi, label);
      if (ci < 0) return false;
      beam_entry_t *b = &bm->pool[bi], *c = &bm->pool[ci]; /* after the pool may have moved */
      if (c->cur.total != -INFINITY) continue; /* already in the beam */
      c->cur.blank = -INFINITY;
      double prev = c->label == b->label ? b->old.blank : b->old.total;
      c->cur.label = x[label] - mx + prev;
      c->cur.total = c->cur.label;
      if (beam_candidate(bm, c->cur.total)) {
        c->stamp = bm->clock++;
        if (bm->n_leaves == bm->width) {
          /* The lowest entry leaves the beam: its probabilities are forgotten. */
          const int64_t w = beam_bottom(bm);
          bm->pool[bm->leaves[w]].cur = kZeroProb;
          bm->leaves[w] = ci;
        } else {
          bm->leaves[bm->n_leaves++] = ci;
        }
      } else {
        c->old = kZeroProb;
        c->cur = kZeroProb;
      }
    }
  }
  return true;
}

/* Entry e's labels, root first, into out (at most depth of them); repeats merged on request,
 * as TensorFlow's LabelSeq. Returns how many. */
static int64_t beam_labels(const beam_t *bm, int64_t e, bool merge, int64_t *out) {
  int64_t n = 0, prev = -1;
  for (; bm->pool[e].parent >= 0; e = bm->pool[e].parent) {
    if (!merge || bm->pool[e].label != prev) out[n++] = bm->pool[e].label;
    prev = bm->pool[e].label;
  }
  for (int64_t i = 0; i < n / 2; i++) {
    int64_t t = out[i];
    out[i] = out[n - 1 - i];
    out[n - 1 - i] = t;
  }
  return n;
}

static weft_status_t *k_ctc_beam(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, seq, lp;
  const int64_t width = weft__cpu_attr_int(ctx, "beam_width", 1);
  const int64_t paths = weft__cpu_attr_int(ctx, "top_paths", 1);
  const bool merge = weft__cpu_attr_bool(ctx, "merge_repeated", true);
  if (width < 1 || paths < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "beam_width %lld and top_paths %lld must "
                           "be at least 1", (long long)width, (long long)paths);
  if (paths > INT_MAX / 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "top_paths %lld is too large",
                           (long long)paths);
  WEFT_RETURN_IF_ERROR(decoder_inputs(ctx, paths, &x, &seq, &lp));
  const int64_t T = x.dims[0], batch = x.dims[1], C = x.dims[2];
  if (width > INT64_MAX / 4 / (C + 1) / (T + 1))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "beam_width %lld is too large",
                           (long long)width);
  if (paths > width)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "requested more paths than the beam width.");
  /* The beam never holds more entries than there are prefixes of at most T labels (1 + K +
   * K^2 + ... for K = C - 1 labels), so a huge beam_width costs no more than that. */
  int64_t cap = 1;
  for (int64_t k = 1, pw = 1; k <= T && cap < width; k++) {
    pw = pw > width / (C > 1 ? C - 1 : 1) ? width : pw * (C - 1);
    cap = cap > width - pw ? width : cap + pw;
    if (C <= 1) break;
  }
  if (cap > width) cap = width;
  /* Fewer entries than paths can only end as TensorFlow's TopPaths does. */
  if (paths > cap)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Less leaves in the beam search than requested.");
  /* Per path: batch + 1 offsets and up to batch * T labels. */
  const int64_t per_path = batch + 1 + batch * T;
  if (per_path > INT64_MAX / paths / 2) return oom(ctx);
  beam_t bm = {.width = width, .C = C};
  int64_t *out = malloc(sizeof(int64_t) * (size_t)(paths * per_path));
  double *row = malloc(sizeof(double) * (size_t)C);
  int64_t *scratch = malloc(sizeof(int64_t) * (size_t)cap);
  bm.leaves = malloc(sizeof(int64_t) * (size_t)cap);
  weft_status_t *st = NULL;
  if (!out || !row || !scratch || !bm.leaves || !beam_reserve(&bm)) st = oom(ctx);
  for (int64_t p = 0; p < paths && !st; p++) out[p * per_path] = 0;
  for (int64_t b = 0; b < batch && !st; b++) {
    beam_reset(&bm);
    for (int64_t t = 0; t < weft__cpu_index_at(&seq, b) && !st; t++) {
      for (int64_t c = 0; c < C; c++)
        row[c] = weft__cpu_load_f(x.dtype, x.data, (t * batch + b) * C + c);
      if (!beam_step(&bm, row, scratch)) st = oom(ctx);
    }
    if (st) break;
    if (paths > bm.n_leaves) {
      st = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Less leaves in the beam search than requested.");
      break;
    }
    beam_sort(&bm);
    for (int64_t p = 0; p < paths; p++) {
      int64_t *off = out + p * per_path, *seqs = off + batch + 1;
      off[b + 1] = off[b] + beam_labels(&bm, bm.leaves[p], merge, seqs + off[b]);
      weft__cpu_store_f(x.dtype, lp.data, b * paths + p, bm.pool[bm.leaves[p]].cur.total);
    }
  }
  for (int64_t p = 0; p < paths && !st; p++)
    st = store_path(ctx, (int)paths, (int)p, batch, out + p * per_path,
                    out + p * per_path + batch + 1);
  free(bm.pool);
  free(bm.keys);
  free(bm.leaves);
  free(scratch);
  free(row);
  free(out);
  return st;
}

static const weft_dtype_t ctc_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};

weft_status_t *weft__cpu_register_ctc(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "CTCLoss", .compute = k_ctc_loss, .type_attr = "T", .dtypes = ctc_types,
       .n_dtypes = 2},
      {.op = "CTCGreedyDecoder", .compute = k_ctc_greedy, .type_attr = "T", .dtypes = ctc_types,
       .n_dtypes = 2},
      {.op = "CTCBeamSearchDecoder", .compute = k_ctc_beam, .type_attr = "T",
       .dtypes = ctc_types, .n_dtypes = 2},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
