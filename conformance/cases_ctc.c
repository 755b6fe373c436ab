/* cases_ctc.c: conformance cases of the sequence ops CTCLoss, CTCGreedyDecoder,
 * CTCBeamSearchDecoder and EditDistance. The references are computed here by the plainest means,
 * not the kernels' algorithms: CTC probabilities by enumerating every alignment path of a tiny
 * case (T <= 5 steps, C <= 4 classes) and summing the paths that collapse to each labelling, the
 * CTC gradient by central differences of that sum, the greedy decoder from sequences written out
 * by hand, and edit distances by the textbook dynamic programme. Error cases check TensorFlow's
 * codes and messages. */
#include <math.h>
#include <string.h>

#include "reference.h"

static void run_error(cf_run_ctx_t *ctx, cf_case_t *c, weft_code_t code, const char *msg) {
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, code, msg);
  cf_run_case(ctx, c);
}

static cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt, cf_rng_t *rng) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_rng(c, rng);
  return c;
}

/* ---------------------------------------------------------------------------------------------
 * Path enumeration. A path is one class per step (base-C digits of its number); it collapses to
 * its labelling by merging runs of one class (when merge) and dropping blanks (class C - 1). */

static int collapse_path(int64_t path, int T, int C, bool merge, int *out) {
  int n = 0, prev = -1;
  for (int t = 0; t < T; t++) {
    int c = (int)(path % C);
    path /= C;
    if (c != C - 1 && !(merge && c == prev)) out[n++] = c;
    prev = c;
  }
  return n;
}

/* Softmax of x[t, b, :] over steps t < T into y[t][c]. */
static void softmax_steps(const double *x, int B, int C, int b, int T, double y[5][4]) {
  for (int t = 0; t < T; t++) {
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < C; c++) mx = fmax(mx, x[(t * B + b) * C + c]);
    for (int c = 0; c < C; c++) sum += y[t][c] = exp(x[(t * B + b) * C + c] - mx);
    for (int c = 0; c < C; c++) y[t][c] /= sum;
  }
}

/* The probability that entry b's paths over T steps collapse to labels l (n of them). */
static double ctc_prob(const double *x, int B, int C, int b, int T, const int *l, int n,
                       bool merge) {
  double y[5][4];
  softmax_steps(x, B, C, b, T, y);
  int64_t paths = 1;
  for (int t = 0; t < T; t++) paths *= C;
  double total = 0;
  for (int64_t p = 0; p < paths; p++) {
    int got[5];
    int m = collapse_path(p, T, C, merge, got);
    if (m != n || (n > 0 && memcmp(got, l, sizeof(int) * (size_t)n) != 0)) continue;
    double w = 1;
    int64_t q = p;
    for (int t = 0; t < T; t++, q /= C) w *= y[t][q % C];
    total += w;
  }
  return total;
}

/* ---------------------------------------------------------------------------------------------
 * CTCLoss: loss[b] = -log p(labels_b | inputs), gradient = d loss / d inputs. */

typedef struct ctc_case {
  const char *name;
  int T, B, C;
  int len[3];       /* sequence_length per entry */
  int n_lab[3];     /* raw labels per entry */
  int lab[3][4];    /* raw labels (as given to the op) */
  bool collapse, merge, ignore_longer;
} ctc_case_t;

/* The labels the loss uses: collapsed on request, cut at the first label >= C - 1. */
static int effective_labels(const ctc_case_t *k, int b, int *l) {
  int n = 0;
  for (int i = 0; i < k->n_lab[b]; i++) {
    if (i > 0 && k->collapse && k->lab[b][i] == k->lab[b][i - 1]) continue;
    if (k->lab[b][i] >= k->C - 1) break;
    l[n++] = k->lab[b][i];
  }
  return n;
}

static double ctc_loss_ref(const ctc_case_t *k, const double *x, int b) {
  int l[4];
  int n = effective_labels(k, b, l);
  return -log(ctc_prob(x, k->B, k->C, b, k->len[b], l, n, k->merge));
}

static void emit_ctc_loss(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const ctc_case_t cases[] = {
      {"basic", 5, 2, 4, {5, 4}, {2, 1}, {{0, 1}, {2}}, false, true, false},
      {"repeat_needs_blank", 4, 1, 3, {4}, {2}, {{1, 1}}, false, true, false},
      {"unmerged", 4, 2, 3, {4, 3}, {2, 2}, {{1, 1}, {0, 1}}, false, false, false},
      {"collapse_preprocess", 5, 1, 4, {5}, {3}, {{1, 1, 2}}, true, true, false},
      {"zero_length_entry", 3, 2, 3, {3, 0}, {1, 1}, {{0}, {1}}, false, true, true},
      {"no_path_inf", 3, 2, 3, {3, 2}, {1, 2}, {{0}, {1, 1}}, false, true, false},
      {"ignore_longer", 3, 2, 4, {3, 2}, {2, 3}, {{2, 0}, {0, 1, 2}}, false, true, true},
      {"padding_label", 4, 1, 4, {4}, {2}, {{0, 3}}, false, true, false},
      {"only_padding", 3, 1, 3, {3}, {1}, {{2}}, false, true, false},
      {"three_entries", 5, 3, 4, {5, 3, 4}, {3, 1, 2}, {{0, 1, 0}, {2}, {2, 2}}, false, true,
       false},
      {"single_class_label", 5, 1, 2, {5}, {2}, {{0, 0}}, false, true, false},
  };
  for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
    const ctc_case_t *k = &cases[ci];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, k->name, dt, &rng);
    int64_t xd[3] = {k->T, k->B, k->C}, n = 0;
    cf_array_t *x = cf_gen_uniform(&rng, dt, 3, xd, -2, 2);
    for (int b = 0; b < k->B; b++) n += k->n_lab[b];
    int64_t id[2] = {n, 2}, B = k->B;
    cf_array_t *idx = cf_array_new(WEFT_DT_INT64, 2, id);
    cf_array_t *vals = cf_array_new(WEFT_DT_INT32, 1, &n);
    cf_array_t *len = cf_array_new(WEFT_DT_INT32, 1, &B);
    for (int b = 0, r = 0; b < k->B; b++) {
      len->v[b] = k->len[b];
      for (int i = 0; i < k->n_lab[b]; i++, r++) {
        idx->v[2 * r] = b;
        idx->v[2 * r + 1] = i;
        vals->v[r] = k->lab[b][i];
      }
    }
    cf_array_t *loss = cf_array_new(dt, 1, &B), *grad = cf_array_new(dt, 3, xd);
    double *xv = g_memdup2(x->v, sizeof(double) * (size_t)x->n);
    for (int b = 0; b < k->B; b++) {
      int l[4];
      const int T = k->len[b];
      if (T == 0 || (k->ignore_longer && k->n_lab[b] > T)) continue; /* zero loss, zero grad */
      loss->v[b] = ctc_loss_ref(k, xv, b);
      effective_labels(k, b, l);
      double y[5][4];
      softmax_steps(xv, k->B, k->C, b, T, y);
      for (int t = 0; t < T; t++)
        for (int cl = 0; cl < k->C; cl++) {
          const int64_t at = (t * k->B + b) * k->C + cl;
          if (isinf(loss->v[b])) { /* no path: TensorFlow's gradient is the softmax */
            grad->v[at] = y[t][cl];
            continue;
          }
          const double h = 1e-5, orig = xv[at];
          xv[at] = orig + h;
          double up = ctc_loss_ref(k, xv, b);
          xv[at] = orig - h;
          double down = ctc_loss_ref(k, xv, b);
          xv[at] = orig;
          grad->v[at] = (up - down) / (2 * h);
        }
    }
    g_free(xv);
    cf_case_input(c, x);
    cf_case_input(c, idx);
    cf_case_input(c, vals);
    cf_case_input(c, len);
    cf_case_attr_bool(c, "preprocess_collapse_repeated", k->collapse);
    cf_case_attr_bool(c, "ctc_merge_repeated", k->merge);
    cf_case_attr_bool(c, "ignore_longer_outputs_than_inputs", k->ignore_longer);
    cf_case_expect(c, loss);
    cf_case_expect(c, grad);
    /* The central differences carry about 1e-10 of error; float32 rounds its inputs. */
    if (dt == WEFT_DT_DOUBLE) c->tol = (cf_tol_t){.rtol = 1e-7, .atol = 1e-8, .max_nmse = 1e-12};
    else c->tol = cf_tol_scale(c->tol, 10);
    cf_run_case(ctx, c);
  }

  /* Errors, each with TensorFlow's message. The inputs: T = 3, B = 2, C = 4. */
  static const struct {
    const char *name;
    int64_t rows, vals_n; /* labels_indices rows, labels_values length */
    int64_t idx[8];
    int lab[4];
    int len[2];
    bool x_matrix, ignore_longer;
    weft_code_t code;
    const char *msg;
  } errs[] = {
      {"error_too_long", 4, 4, {0, 0, 0, 1, 0, 2, 1, 0}, {0, 1, 2, 0}, {2, 3}, false, false,
       WEFT_INVALID_ARGUMENT,
       "Not enough time for target transition sequence (required: 3, available: 2)0You can "
       "turn this error into a warning by using the flag ignore_longer_outputs_than_inputs"},
      {"error_seq_len_over_max_time", 2, 2, {0, 0, 1, 0}, {0, 1}, {3, 4}, false, false,
       WEFT_INVALID_ARGUMENT, "sequence_length(1) <= 3"},
      {"error_negative_seq_len", 2, 2, {0, 0, 1, 0}, {0, 1}, {-1, 3}, false, false,
       WEFT_INVALID_ARGUMENT, "seq_len(0) < 0"},
      {"error_empty_labels", 1, 1, {0, 0}, {1}, {3, 3}, false, false, WEFT_INVALID_ARGUMENT,
       "Labels length is zero in batch 1"},
      {"error_out_of_order", 3, 3, {0, 1, 0, 0, 1, 0}, {0, 1, 2}, {3, 3}, false, false,
       WEFT_INVALID_ARGUMENT,
       "label SparseTensor is not valid: indices[1] = [0,0] is out of order"},
      {"error_repeated", 3, 3, {0, 0, 0, 0, 1, 0}, {0, 1, 2}, {3, 3}, false, false,
       WEFT_INVALID_ARGUMENT, "label SparseTensor is not valid: indices[1] = [0,0] is repeated"},
      {"error_batch_out_of_bounds", 2, 2, {0, 0, 2, 0}, {0, 1}, {3, 3}, false, false,
       WEFT_INVALID_ARGUMENT,
       "label SparseTensor is not valid: indices[1] = [2,0] is out of bounds: need 0 <= index "
       "< [2,1]"},
      {"error_negative_label", 2, 2, {0, 0, 1, 0}, {-1, 1}, {3, 3}, false, false,
       WEFT_INVALID_ARGUMENT, "All labels must be nonnegative integers, batch: 0 labels: -1"},
      {"error_label_after_blank", 3, 3, {0, 0, 0, 1, 1, 0}, {3, 1, 0}, {3, 3}, false, false,
       WEFT_INVALID_ARGUMENT,
       "Saw a non-null label (index >= num_classes - 1) following a null label, batch: 0 "
       "num_classes: 4 labels: 3,1 labels seen so far: "},
      {"error_rows_mismatch", 2, 3, {0, 0, 1, 0}, {0, 1, 2}, {3, 3}, false, false,
       WEFT_INVALID_ARGUMENT,
       "labels_indices and labels_values must contain the same number of rows"},
      {"error_inputs_rank", 2, 2, {0, 0, 1, 0}, {0, 1}, {3, 3}, true, false,
       WEFT_INVALID_ARGUMENT, "inputs is not a 3-Tensor"},
  };
  for (size_t e = 0; e < G_N_ELEMENTS(errs); e++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[e].name, dt, &rng);
    int64_t xd[3] = {3, 2, 4}, md[2] = {6, 4}, id[2] = {errs[e].rows, 2}, two = 2;
    int xi = cf_case_input(c, errs[e].x_matrix ? cf_gen_uniform(&rng, dt, 2, md, -1, 1)
                                               : cf_gen_uniform(&rng, dt, 3, xd, -1, 1));
    if (errs[e].x_matrix) c->unknown_shape[xi] = true;
    cf_array_t *idx = cf_array_new(WEFT_DT_INT64, 2, id);
    for (int64_t i = 0; i < 2 * errs[e].rows; i++) idx->v[i] = (double)errs[e].idx[i];
    cf_array_t *vals = cf_array_new(WEFT_DT_INT32, 1, &errs[e].vals_n);
    for (int64_t i = 0; i < errs[e].vals_n; i++) vals->v[i] = errs[e].lab[i];
    const int64_t lens[2] = {errs[e].len[0], errs[e].len[1]};
    cf_case_input(c, idx);
    cf_case_input(c, vals);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, two, lens));
    cf_case_attr_bool(c, "ignore_longer_outputs_than_inputs", errs[e].ignore_longer);
    run_error(ctx, c, errs[e].code, errs[e].msg);
  }
}

/* ---------------------------------------------------------------------------------------------
 * CTCGreedyDecoder: hand-made inputs whose best class per step is written out below. */

static void emit_ctc_greedy(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  /* T = 4, B = 2, C = 3 (blank 2 by default). best[t][b] is the step's best class, with input
   * 1 + 0.25 t + 0.5 b there and 0 elsewhere (so log_probability = -sum of those). */
  static const int best[4][2] = {{0, 2}, {0, 1}, {2, 1}, {1, 0}};
  static const int seq_len[2] = {4, 3};
  static const struct {
    const char *name;
    bool merge;
    int blank_index; /* the attr; -1: C - 1 */
    int n[2];        /* decoded lengths */
    int dec[2][4];
  } cases[] = {
      {"merge_repeated", true, -1, {2, 1}, {{0, 1}, {1}}},
      {"keep_repeated", false, -1, {3, 2}, {{0, 0, 1}, {1, 1}}},
      {"blank_index_0", true, 0, {2, 2}, {{2, 1}, {2, 1}}},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    int64_t xd[3] = {4, 2, 3}, two = 2, lpd[2] = {2, 1};
    cf_array_t *x = cf_array_new(dt, 3, xd);
    for (int t = 0; t < 4; t++)
      for (int b = 0; b < 2; b++) x->v[(t * 2 + b) * 3 + best[t][b]] = 1 + 0.25 * t + 0.5 * b;
    const int64_t lens[2] = {seq_len[0], seq_len[1]};
    cf_case_input(c, x);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, lens));
    cf_case_attr_bool(c, "merge_repeated", cases[k].merge);
    cf_case_attr_int(c, "blank_index", cases[k].blank_index);
    int64_t total = cases[k].n[0] + cases[k].n[1], id[2] = {total, 2};
    cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, id);
    cf_array_t *val = cf_array_new(WEFT_DT_INT64, 1, &total);
    for (int b = 0, r = 0; b < 2; b++)
      for (int i = 0; i < cases[k].n[b]; i++, r++) {
        ind->v[2 * r] = b;
        ind->v[2 * r + 1] = i;
        val->v[r] = cases[k].dec[b][i];
      }
    const int64_t shape[2] = {2, cases[k].n[0] > cases[k].n[1] ? cases[k].n[0] : cases[k].n[1]};
    cf_array_t *lp = cf_array_new(dt, 2, lpd);
    lp->v[0] = -(1 + 1.25 + 1.5 + 1.75);
    lp->v[1] = -(1.5 + 1.75 + 2.0);
    cf_case_expect(c, ind);
    cf_case_expect(c, val);
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, two, shape));
    cf_case_expect(c, lp);
    cf_run_case(ctx, c);
  }
  /* Ties go to the first class; a zero-length entry decodes to nothing. */
  {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "ties_first_class", dt, &rng);
    int64_t xd[3] = {2, 2, 3}, lpd[2] = {2, 1}, one = 1, id[2] = {1, 2};
    cf_array_t *x = cf_array_new(dt, 3, xd);
    const double xv[12] = {0.5, 0.5, 0.5, 0, 0, 0, 1, 1, 0, 0, 0, 0};
    memcpy(x->v, xv, sizeof xv);
    const int64_t lens[2] = {2, 0}, ind[2] = {0, 0}, val[1] = {0}, shape[2] = {2, 1};
    cf_case_input(c, x);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, lens));
    cf_case_attr_bool(c, "merge_repeated", true);
    cf_array_t *lp = cf_array_new(dt, 2, lpd);
    lp->v[0] = -1.5;
    cf_array_t *flat = cf_array_ints(WEFT_DT_INT64, 2, ind);
    cf_case_expect(c, cf_array_reshape(flat, 2, id));
    cf_array_free(flat);
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, one, val));
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, 2, shape));
    cf_case_expect(c, lp);
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name;
    int64_t T, len0;
    int blank_index;
    weft_code_t code;
    const char *msg;
  } errs[] = {
      {"error_seq_len_over_max_time", 2, 3, -1, WEFT_FAILED_PRECONDITION,
       "sequence_length(0) <= 2"},
      {"error_max_time_0", 0, 0, -1, WEFT_INVALID_ARGUMENT, "inputs must not be empty"},
      {"error_blank_index", 2, 1, 3, WEFT_INVALID_ARGUMENT,
       "blank_index expected to be between -3 and 2 but was 3"},
  };
  for (size_t e = 0; e < G_N_ELEMENTS(errs); e++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[e].name, dt, &rng);
    int64_t xd[3] = {errs[e].T, 1, 3};
    cf_case_input(c, cf_gen_uniform(&rng, dt, 3, xd, -1, 1));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, &errs[e].len0));
    cf_case_attr_int(c, "blank_index", errs[e].blank_index);
    run_error(ctx, c, errs[e].code, errs[e].msg);
  }
}

/* ---------------------------------------------------------------------------------------------
 * CTCBeamSearchDecoder. With a beam wider than the number of prefixes there can be, nothing is
 * pruned and each prefix's score is exactly the sum over the paths that collapse to it (merged
 * repeats, blanks dropped) of prod_t exp(x[t, c] - max_c x[t, :]) -- TensorFlow's scores, which
 * take each step's inputs less their maximum. The top paths are the labellings of greatest such
 * sums, written with repeats merged when merge_repeated is set. At most 2 paths: a case fetches
 * at most CF_MAX_OUTPUTS (8) outputs. */

typedef struct labelling {
  int n;
  int l[5];
  double score;
} labelling_t;

static int cmp_labelling(const void *a, const void *b) {
  double x = ((const labelling_t *)a)->score, y = ((const labelling_t *)b)->score;
  return x > y ? -1 : x < y ? 1 : 0;
}

static void emit_ctc_beam(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *name;
    int T, B, C;
    int64_t width;
    int paths;
    int len[2];
    bool merge;
  } cases[] = {
      {"exhaustive_two_entries", 4, 2, 3, 32, 2, {4, 3}, true},
      {"exhaustive_unmerged", 4, 1, 3, 32, 2, {4}, false},
      {"exhaustive_c4", 4, 1, 4, 128, 2, {4}, true},
      {"exhaustive_t5", 5, 1, 3, 64, 2, {5}, false},
      {"zero_length", 2, 1, 3, 4, 1, {0}, true},
      /* A beam far wider than the prefixes there can be: bounded by those, not the attr. */
      {"huge_beam_width", 4, 1, 3, INT64_C(1) << 40, 2, {4}, true},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    const int T = cases[k].T, B = cases[k].B, C = cases[k].C, P = cases[k].paths;
    int64_t xd[3] = {T, B, C};
    cf_array_t *x = cf_gen_uniform(&rng, dt, 3, xd, -2, 2);
    int64_t lens[2] = {cases[k].len[0], cases[k].len[1]};
    cf_case_input(c, x);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, B, lens));
    cf_case_attr_int(c, "beam_width", cases[k].width);
    cf_case_attr_int(c, "top_paths", P);
    cf_case_attr_bool(c, "merge_repeated", cases[k].merge);
    /* top[b][p]: entry b's p-th labelling. */
    labelling_t top[2][4];
    for (int b = 0; b < B; b++) {
      const int Tb = cases[k].len[b];
      int64_t paths = 1;
      for (int t = 0; t < Tb; t++) paths *= C;
      GArray *seen = g_array_new(FALSE, TRUE, sizeof(labelling_t));
      for (int64_t p = 0; p < paths; p++) {
        labelling_t cand = {0};
        cand.n = collapse_path(p, Tb, C, true, cand.l);
        double w = 0;
        int64_t q = p;
        for (int t = 0; t < Tb; t++, q /= C) {
          double mx = -INFINITY;
          for (int cl = 0; cl < C; cl++) mx = fmax(mx, x->v[(t * B + b) * C + cl]);
          w += x->v[(t * B + b) * C + q % C] - mx;
        }
        guint i = 0;
        for (; i < seen->len; i++) {
          labelling_t *s = &g_array_index(seen, labelling_t, i);
          if (s->n == cand.n && memcmp(s->l, cand.l, sizeof(int) * (size_t)cand.n) == 0) break;
        }
        if (i == seen->len) g_array_append_val(seen, cand);
        labelling_t *s = &g_array_index(seen, labelling_t, i);
        s->score += exp(w);
      }
      g_array_sort(seen, cmp_labelling);
      for (int p = 0; p < P; p++) {
        top[b][p] = g_array_index(seen, labelling_t, p);
        top[b][p].score = log(top[b][p].score);
        if (cases[k].merge) { /* TensorFlow's LabelSeq merges repeats of the prefix itself */
          int n = 0;
          for (int i = 0; i < top[b][p].n; i++)
            if (i == 0 || top[b][p].l[i] != top[b][p].l[i - 1]) top[b][p].l[n++] = top[b][p].l[i];
          top[b][p].n = n;
        }
      }
      g_array_free(seen, TRUE);
    }
    cf_array_t *vals[4];
    for (int p = 0; p < P; p++) {
      int64_t total = 0, longest = 0;
      for (int b = 0; b < B; b++) {
        total += top[b][p].n;
        longest = top[b][p].n > longest ? top[b][p].n : longest;
      }
      int64_t id[2] = {total, 2};
      cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, id);
      vals[p] = cf_array_new(WEFT_DT_INT64, 1, &total);
      for (int b = 0, r = 0; b < B; b++)
        for (int i = 0; i < top[b][p].n; i++, r++) {
          ind->v[2 * r] = b;
          ind->v[2 * r + 1] = i;
          vals[p]->v[r] = top[b][p].l[i];
        }
      cf_case_expect(c, ind);
      (void)longest;
    }
    for (int p = 0; p < P; p++) cf_case_expect(c, vals[p]);
    for (int p = 0; p < P; p++) {
      int64_t longest = 0;
      for (int b = 0; b < B; b++) longest = top[b][p].n > longest ? top[b][p].n : longest;
      const int64_t shape[2] = {B, longest};
      cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, 2, shape));
    }
    int64_t lpd[2] = {B, P};
    cf_array_t *lp = cf_array_new(dt, 2, lpd);
    for (int b = 0; b < B; b++)
      for (int p = 0; p < P; p++) lp->v[b * P + p] = top[b][p].score;
    cf_case_expect(c, lp);
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name;
    int width, paths, len;
    const char *msg;
  } errs[] = {
      {"error_paths_over_width", 2, 3, 2, "requested more paths than the beam width."},
      {"error_fewer_leaves", 4, 2, 0, "Less leaves in the beam search than requested."},
  };
  for (size_t e = 0; e < G_N_ELEMENTS(errs); e++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[e].name, dt, &rng);
    int64_t xd[3] = {2, 1, 3}, len = errs[e].len;
    cf_case_input(c, cf_gen_uniform(&rng, dt, 3, xd, -1, 1));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, &len));
    cf_case_attr_int(c, "beam_width", errs[e].width);
    cf_case_attr_int(c, "top_paths", errs[e].paths);
    run_error(ctx, c, WEFT_INVALID_ARGUMENT, errs[e].msg);
  }
}

/* ---------------------------------------------------------------------------------------------
 * EditDistance on rank-3 sparse tensors [rows, cols, len]: each (row, col) holds a sequence. */

/* Levenshtein distance by the full (n + 1) x (m + 1) table. */
static double levenshtein_ref(const double *a, int n, const double *b, int m) {
  double d[9][9] = {{0}};
  for (int i = 0; i <= n; i++) d[i][0] = i;
  for (int j = 0; j <= m; j++) d[0][j] = j;
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= m; j++)
      d[i][j] = fmin(fmin(d[i - 1][j] + 1, d[i][j - 1] + 1),
                     d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1));
  return d[n][m];
}

/* A sparse tensor of dense shape {rows, cols, 8} from sequence lengths len[r][c] and values. */
static void sparse_from(weft_dtype_t dt, int rows, int cols, int len[3][3], double seq[3][3][8],
                        cf_array_t **ind, cf_array_t **val) {
  int64_t n = 0;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) n += len[r][c];
  int64_t id[2] = {n, 3};
  *ind = cf_array_new(WEFT_DT_INT64, 2, id);
  *val = cf_array_new(dt, 1, &n);
  int64_t k = 0;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      for (int i = 0; i < len[r][c]; i++, k++) {
        (*ind)->v[3 * k] = r;
        (*ind)->v[3 * k + 1] = c;
        (*ind)->v[3 * k + 2] = i;
        (*val)->v[k] = seq[r][c][i];
      }
}

static void emit_edit_distance(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *name;
    int hr, hc, tr, tc; /* the dense shapes' first two dims */
    bool normalize;
  } cases[] = {
      {"same_shape_normalized", 2, 3, 2, 3, true},
      {"same_shape_raw", 2, 3, 2, 3, false},
      {"truth_larger", 2, 2, 3, 3, true},
      {"hypothesis_larger", 3, 3, 2, 1, false},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    int hl[3][3] = {{0}}, tl[3][3] = {{0}};
    double hs[3][3][8], ts[3][3][8];
    for (int r = 0; r < 3; r++)
      for (int cc = 0; cc < 3; cc++) {
        /* Lengths 0..4 (empty sequences on either side), values from a small alphabet. */
        if (r < cases[k].hr && cc < cases[k].hc) hl[r][cc] = (int)cf_rng_int(&rng, 0, 4);
        if (r < cases[k].tr && cc < cases[k].tc) tl[r][cc] = (int)cf_rng_int(&rng, 0, 4);
        for (int i = 0; i < 8; i++) {
          hs[r][cc][i] = (double)cf_rng_int(&rng, 0, 3);
          ts[r][cc][i] = (double)cf_rng_int(&rng, 0, 3);
        }
      }
    cf_array_t *hi, *hv, *ti, *tv;
    sparse_from(dt, cases[k].hr, cases[k].hc, hl, hs, &hi, &hv);
    sparse_from(dt, cases[k].tr, cases[k].tc, tl, ts, &ti, &tv);
    const int64_t hshape[3] = {cases[k].hr, cases[k].hc, 8},
                  tshape[3] = {cases[k].tr, cases[k].tc, 8};
    int64_t od[2] = {cases[k].hr > cases[k].tr ? cases[k].hr : cases[k].tr,
                     cases[k].hc > cases[k].tc ? cases[k].hc : cases[k].tc};
    cf_array_t *want = cf_array_new(WEFT_DT_FLOAT, 2, od);
    for (int r = 0; r < od[0]; r++)
      for (int cc = 0; cc < od[1]; cc++) {
        const int n = r < 3 && cc < 3 ? hl[r][cc] : 0, m = r < 3 && cc < 3 ? tl[r][cc] : 0;
        double d = levenshtein_ref(n ? hs[r][cc] : NULL, n, m ? ts[r][cc] : NULL, m);
        if (cases[k].normalize) d = m > 0 ? d / m : (n > 0 ? INFINITY : 0);
        want->v[r * od[1] + cc] = d;
      }
    cf_case_input(c, hi);
    cf_case_input(c, hv);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, hshape));
    cf_case_input(c, ti);
    cf_case_input(c, tv);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, tshape));
    cf_case_attr_bool(c, "normalize", cases[k].normalize);
    cf_array_round(want); /* the output is float32 whatever the values' dtype */
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  /* Errors: the operands' shapes and unsorted, repeated or out-of-bounds indices. */
  static const struct {
    const char *name;
    int64_t h_rows;
    int64_t h_idx[9];
    int64_t h_rank, t_rank;
    const char *msg;
  } errs[] = {
      {"error_out_of_order", 2, {0, 1, 0, 0, 0, 0}, 3, 3,
       "hypothesis_indices[1] = [0,0,0] is out of order"},
      {"error_repeated", 2, {0, 0, 1, 0, 0, 1}, 3, 3,
       "hypothesis_indices[1] = [0,0,1] is repeated"},
      {"error_out_of_bounds", 1, {0, 5, 0}, 3, 3,
       "hypothesis_indices[0] = [0,5,0] is out of bounds: need 0 <= index < [2,2,4]"},
      {"error_rank_mismatch", 1, {0, 0}, 2, 3,
       "Expected hypothesis_shape.NumElements == #cols(hypothesis_indices)"},
  };
  for (size_t e = 0; e < G_N_ELEMENTS(errs); e++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[e].name, dt, &rng);
    int64_t hid[2] = {errs[e].h_rows, errs[e].h_rank}, tid[2] = {1, 3}, one = 1;
    cf_array_t *hi = cf_array_new(WEFT_DT_INT64, 2, hid);
    for (int64_t i = 0; i < hi->n; i++) hi->v[i] = (double)errs[e].h_idx[i];
    cf_array_t *hv = cf_array_new(dt, 1, &errs[e].h_rows);
    const int64_t shape[3] = {2, 2, 4}, tidx[3] = {0, 0, 0};
    cf_case_input(c, hi);
    cf_case_input(c, hv);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, errs[e].t_rank, shape));
    cf_array_t *flat = cf_array_ints(WEFT_DT_INT64, 3, tidx);
    cf_case_input(c, cf_array_reshape(flat, 2, tid));
    cf_array_free(flat);
    cf_case_input(c, cf_array_new(dt, 1, &one));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, errs[e].t_rank, shape));
    run_error(ctx, c, WEFT_INVALID_ARGUMENT, errs[e].msg);
  }
}

static const weft_dtype_t ctc_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INVALID};
static const weft_dtype_t edit_dtypes[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_FLOAT,
                                           WEFT_DT_DOUBLE, WEFT_DT_INT8, WEFT_DT_UINT8,
                                           WEFT_DT_INVALID};

const cf_suite_t cf_suites_ctc[] = {
    {"CTCLoss", ctc_dtypes, emit_ctc_loss, NULL},
    {"CTCGreedyDecoder", ctc_dtypes, emit_ctc_greedy, NULL},
    {"CTCBeamSearchDecoder", ctc_dtypes, emit_ctc_beam, NULL},
    {"EditDistance", edit_dtypes, emit_edit_distance, NULL},
    {NULL, NULL, NULL, NULL},
};
