/* test_more_gradients.c: weft_gradients of the cumulative, top-k, segment, stitch/partition,
 * broadcast, clip, diagonal/band, space/depth/batch, extra math and linear algebra ops, each
 * checked against central finite differences of the forward graph in float64, with batch and
 * broadcast shapes, negative unsorted segment ids, empty segments and the ops' attrs set. */
#include "grad_check.h"

/* x + scale * values(): fed values kept apart from 0 or well conditioned as a test needs. */
static double *shifted(int64_t n, double seed, double base, double scale) {
  double *v = values(n, seed);
  for (int64_t i = 0; i < n; i++) v[i] = base + scale * v[i];
  return v;
}

static weft_output_t out_of(weft_op_builder_t *b, int index) {
  return weft_out(finish(b), index);
}

static weft_op_builder_t *op_with_bools(weft_graph_t *g, const char *op, const weft_output_t *ins,
                                        int n, const char *a1, bool v1, const char *a2, bool v2) {
  weft_op_builder_t *b = op_new(g, op, ins, n);
  if (a1) weft_op_set_attr_bool(b, a1, v1);
  if (a2) weft_op_set_attr_bool(b, a2, v2);
  return b;
}

static void test_cumulative(void) {
  static const char *const ops[2] = {"Cumsum", "Cumprod"};
  for (int k = 0; k < 2; k++)
    for (int axis = 0; axis < 2; axis++)
      for (int mode = 0; mode < 4; mode++) {
        weft_graph_t *g = weft_graph_new();
        feeds_t f = {0};
        int64_t d[2] = {3, 4};
        double *xv = shifted(12, 0.2, k ? 1.0 : 0.0, k ? 0.5 : 1.0);
        weft_output_t ins[2] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv), iscalar(g, axis)};
        weft_op_builder_t *b = op_with_bools(g, ops[k], ins, 2, "exclusive", mode & 1, "reverse",
                                             (mode & 2) != 0);
        char *label = g_strdup_printf("%s axis %d exclusive %d reverse %d", ops[k], axis,
                                      mode & 1, mode >> 1);
        check_fd(g, &f, out_of(b, 0), 1u, label);
        g_free(label);
        g_free(xv);
        weft_graph_free(g);
      }
}

/* SparseTensorDenseMatMul with each adjoint pair, a repeated and an unsorted entry: the values'
 * and b's gradients (indices and shape are constants). SparseReorder: the values' gradient
 * permuted back. SparseAdd: both operands' values through SparseAddGrad. SparseSlice: the
 * values through SparseSliceGrad. */
static void test_sparse(void) {
  static const char *const names[4] = {"plain", "adjoint_b", "adjoint_a", "adjoint_both"};
  const double idx[] = {0, 1, 2, 3, 1, 2, 0, 0, 1, 2, 2, 0};
  for (int v = 0; v < 4; v++) {
    bool aa = v >= 2, ab = v % 2;
    int64_t inner = aa ? 3 : 4, idims[2] = {6, 2}, nnz = 6, sdims = 2;
    int64_t bd[2] = {ab ? 5 : inner, ab ? inner : 5};
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    double *av = values(6, 0.4), *bv = values(bd[0] * bd[1], 0.9);
    weft_output_t ins[4] = {cst(g, WEFT_DT_INT64, 2, idims, idx),
                            feed(g, &f, "a_values", WEFT_DT_DOUBLE, 1, &nnz, av),
                            cst(g, WEFT_DT_INT64, 1, &sdims, (const double[]){3, 4}),
                            feed(g, &f, "b", WEFT_DT_DOUBLE, 2, bd, bv)};
    weft_op_builder_t *b = op_with_bools(g, "SparseTensorDenseMatMul", ins, 4, "adjoint_a", aa,
                                         "adjoint_b", ab);
    check_fd(g, &f, out_of(b, 0), 3u, names[v]);
    g_free(av);
    g_free(bv);
    weft_graph_free(g);
  }
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t idims[2] = {5, 2}, nnz = 5, sdims = 2;
  double *vv = values(5, 0.2);
  weft_output_t ins[3] = {
      cst(g, WEFT_DT_INT64, 2, idims, (const double[]){2, 1, 0, 3, 1, 0, 0, 1, 2, 0}),
      feed(g, &f, "values", WEFT_DT_DOUBLE, 1, &nnz, vv),
      cst(g, WEFT_DT_INT64, 1, &sdims, (const double[]){3, 4})};
  check_fd(g, &f, out_of(op_new(g, "SparseReorder", ins, 3), 1), 1u, "SparseReorder");
  g_free(vv);
  weft_graph_free(g);
  /* SparseAdd: a and b meet at (0,1) and (1,3); the sum values' gradient goes back to both. */
  g = weft_graph_new();
  memset(&f, 0, sizeof f);
  int64_t ad[2] = {4, 2}, bd[2] = {5, 2}, an = 4, bn = 5;
  double *av = values(4, 0.3), *bv = values(5, 0.8);
  weft_output_t shape = cst(g, WEFT_DT_INT64, 1, &sdims, (const double[]){3, 4});
  weft_output_t add_ins[7] = {
      cst(g, WEFT_DT_INT64, 2, ad, (const double[]){0, 1, 1, 0, 1, 3, 2, 2}),
      feed(g, &f, "a_values", WEFT_DT_DOUBLE, 1, &an, av), shape,
      cst(g, WEFT_DT_INT64, 2, bd, (const double[]){0, 1, 0, 2, 1, 3, 2, 0, 2, 3}),
      feed(g, &f, "b_values", WEFT_DT_DOUBLE, 1, &bn, bv), shape,
      cst(g, WEFT_DT_DOUBLE, 0, NULL, (const double[]){0})};
  check_fd(g, &f, out_of(op_new(g, "SparseAdd", add_ins, 7), 1), 3u, "SparseAdd");
  g_free(av);
  g_free(bv);
  weft_graph_free(g);
  /* SparseSlice: entries 0, 2 and 3 of the five fall in rows 0..1, columns 0..2. */
  g = weft_graph_new();
  memset(&f, 0, sizeof f);
  vv = values(5, 0.6);
  weft_output_t slice_ins[5] = {
      cst(g, WEFT_DT_INT64, 2, idims, (const double[]){0, 1, 0, 3, 1, 0, 1, 2, 2, 0}),
      feed(g, &f, "values", WEFT_DT_DOUBLE, 1, &nnz, vv),
      cst(g, WEFT_DT_INT64, 1, &sdims, (const double[]){3, 4}),
      cst(g, WEFT_DT_INT64, 1, &sdims, (const double[]){0, 0}),
      cst(g, WEFT_DT_INT64, 1, &sdims, (const double[]){2, 3})};
  check_fd(g, &f, out_of(op_new(g, "SparseSlice", slice_ins, 5), 1), 1u, "SparseSlice");
  g_free(vv);
  weft_graph_free(g);
}

static void test_top_k(void) {
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d[3] = {2, 2, 5};
  double *xv = values(20, 0.3);
  weft_output_t ins[2] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, xv), iscalar(g, 3)};
  check_fd(g, &f, out_of(op_new(g, "TopKV2", ins, 2), 0), 1u, "TopKV2");
  g_free(xv);
  weft_graph_free(g);
  /* TopK (k an attr), unsorted: the same gradient through the indices it returns. */
  g = weft_graph_new();
  memset(&f, 0, sizeof f);
  xv = values(20, 0.7);
  ins[0] = feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, xv);
  weft_op_builder_t *b = op_with_bools(g, "TopK", ins, 1, "sorted", false, NULL, false);
  weft_op_set_attr_int(b, "k", 2);
  check_fd(g, &f, out_of(b, 0), 1u, "TopK");
  g_free(xv);
  weft_graph_free(g);
}

/* Sorted ids with segment 2 empty; unsorted ids of rank 2 with negative (dropped) entries. */
static void test_segments(void) {
  static const char *const sorted[] = {"SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin"};
  for (size_t k = 0; k < G_N_ELEMENTS(sorted); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[2] = {5, 2};
    double *xv = values(10, 0.7), ids[5] = {0, 0, 1, 3, 3};
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv);
    check_fd(g, &f, op2(g, sorted[k], x, ivec(g, 5, ids)), 1u, sorted[k]);
    g_free(xv);
    weft_graph_free(g);
  }
  static const char *const unsorted[] = {"UnsortedSegmentSum", "UnsortedSegmentMax",
                                         "UnsortedSegmentMin"};
  for (size_t k = 0; k < G_N_ELEMENTS(unsorted); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[3] = {2, 3, 2}, di[2] = {2, 3};
    double *xv = values(12, 0.1), ids[6] = {0, -1, 2, 2, 0, -1};
    weft_output_t ins[3] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, xv),
                            cst(g, WEFT_DT_INT32, 2, di, ids), iscalar(g, 4)};
    check_fd(g, &f, out_of(op_new(g, unsorted[k], ins, 3), 0), 1u, unsorted[k]);
    g_free(xv);
    weft_graph_free(g);
  }
}

/* Products over segments with no zero, one zero and two zeros (and a negative unsorted id). */
static void test_segment_prod(void) {
  for (int unsorted = 0; unsorted < 2; unsorted++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[2] = {6, 2};
    double xv[12] = {0.5, -1.2, 1.5, 0.8, 0, 0.7, 1.1, 0, -0.9, 0, 1.3, 0.6};
    double ids[6] = {0, 0, 1, 1, 1, unsorted ? -1 : 3};
    weft_output_t ins[3] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv), ivec(g, 6, ids),
                            iscalar(g, 4)};
    const char *op = unsorted ? "UnsortedSegmentProd" : "SegmentProd";
    check_fd(g, &f, out_of(op_new(g, op, ins, unsorted ? 3 : 2), 0), 1u, op);
    weft_graph_free(g);
  }
}

static void test_stitch_partition(void) {
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d[2] = {2, 2};
  double *av = values(4, 0.1), *bv = values(4, 0.5), i0[2] = {0, 2}, i1[2] = {3, 1};
  weft_output_t idx[2] = {ivec(g, 2, i0), ivec(g, 2, i1)};
  weft_output_t data[2] = {feed(g, &f, "a", WEFT_DT_DOUBLE, 2, d, av),
                           feed(g, &f, "b", WEFT_DT_DOUBLE, 2, d, bv)};
  weft_op_builder_t *b = weft_op_new(g, "DynamicStitch", NULL);
  weft_op_add_input_list(b, idx, 2);
  weft_op_add_input_list(b, data, 2);
  check_fd(g, &f, out_of(b, 0), 3u, "DynamicStitch");
  g_free(av);
  g_free(bv);
  weft_graph_free(g);

  /* Output 1 is unused: its rows get zeros. */
  g = weft_graph_new();
  feeds_t f2 = {0};
  int64_t dx[2] = {5, 2};
  double *xv = values(10, 0.2), parts[5] = {1, 0, 1, 2, 0};
  weft_output_t ins[2] = {feed(g, &f2, "x", WEFT_DT_DOUBLE, 2, dx, xv), ivec(g, 5, parts)};
  b = op_new(g, "DynamicPartition", ins, 2);
  weft_op_set_attr_int(b, "num_partitions", 3);
  weft_node_t *p = finish(b);
  weft_output_t both[2] = {weft_out(p, 0), weft_out(p, 2)};
  b = weft_op_new(g, "ConcatV2", NULL);
  weft_op_add_input_list(b, both, 2);
  weft_op_add_input(b, iscalar(g, 0));
  check_fd(g, &f2, out_of(b, 0), 1u, "DynamicPartition");
  g_free(xv);
  weft_graph_free(g);
}

static void test_broadcast_clip(void) {
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d[2] = {3, 1};
  double *xv = values(3, 0.4), shape[3] = {2, 3, 4};
  check_fd(g, &f, op2(g, "BroadcastTo", feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv),
                      ivec(g, 3, shape)),
           1u, "BroadcastTo");
  g_free(xv);
  weft_graph_free(g);

  /* SelectV2 broadcasting all three: cond [2, 1, 3], x [4, 1], y [3]. */
  g = weft_graph_new();
  feeds_t fs = {0};
  int64_t dc[3] = {2, 1, 3}, dxs[2] = {4, 1}, dys = 3;
  double cv[6] = {1, 0, 1, 0, 0, 1}, *xs = values(4, 0.2), ys[3] = {0.3, -0.6, 0.9};
  weft_output_t cond = op2(g, "NotEqual", cst(g, WEFT_DT_DOUBLE, 3, dc, cv),
                           cst(g, WEFT_DT_DOUBLE, 0, NULL, (double[]){0.0}));
  weft_output_t sel[3] = {cond, feed(g, &fs, "x", WEFT_DT_DOUBLE, 2, dxs, xs),
                          feed(g, &fs, "y", WEFT_DT_DOUBLE, 1, &dys, ys)};
  check_fd(g, &fs, out_of(op_new(g, "SelectV2", sel, 3), 0), 3u, "SelectV2");
  g_free(xs);
  weft_graph_free(g);

  /* A scalar lower bound (its gradient a sum) and upper bounds per element, none equal to an
   * element. */
  g = weft_graph_new();
  feeds_t f2 = {0};
  int64_t dx[2] = {4, 3};
  double *v = values(12, 0.25), lo = -0.45, *hi = shifted(12, 0.5, 0.3, 0.3);
  weft_output_t ins[3] = {feed(g, &f2, "x", WEFT_DT_DOUBLE, 2, dx, v),
                          feed(g, &f2, "lo", WEFT_DT_DOUBLE, 0, NULL, &lo),
                          feed(g, &f2, "hi", WEFT_DT_DOUBLE, 2, dx, hi)};
  check_fd(g, &f2, out_of(op_new(g, "ClipByValue", ins, 3), 0), 7u, "ClipByValue");
  g_free(v);
  g_free(hi);
  weft_graph_free(g);
}

static void test_math(void) {
  static const char *const binary[] = {"FloorMod", "DivNoNan"};
  for (size_t k = 0; k < G_N_ELEMENTS(binary); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[2] = {2, 3}, dy = 3;
    double *xv = shifted(6, 0.15, 0.0, 3.0), yv[3] = {0.7, -1.3, 1.9};
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv);
    weft_output_t y = feed(g, &f, "y", WEFT_DT_DOUBLE, 1, &dy, yv);
    check_fd(g, &f, op2(g, binary[k], x, y), 3u, binary[k]);
    g_free(xv);
    weft_graph_free(g);
  }
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d = 5;
  double *xv = values(5, 0.35);
  check_fd(g, &f, op1(g, "Erfc", feed(g, &f, "x", WEFT_DT_DOUBLE, 1, &d, xv)), 1u, "Erfc");
  g_free(xv);
  weft_graph_free(g);

  g = weft_graph_new();
  feeds_t fb = {0};
  double av[4] = {0.5, 1.5, 2.0, 3.5}, bv[4] = {2.5, 0.8, 1.0, 4.0}, x[4] = {0.2, 0.5, 0.7, 0.9};
  int64_t d4 = 4;
  weft_output_t ins[3] = {feed(g, &fb, "a", WEFT_DT_DOUBLE, 1, &d4, av),
                          feed(g, &fb, "b", WEFT_DT_DOUBLE, 1, &d4, bv),
                          feed(g, &fb, "x", WEFT_DT_DOUBLE, 1, &d4, x)};
  check_fd(g, &fb, out_of(op_new(g, "Betainc", ins, 3), 0), 4u, "Betainc");
  weft_graph_free(g);
}

/* Diagonals and bands of a batch of non-square matrices, and the V2 and V3 forms with a k range. */
static void test_diagonals(void) {
  int64_t dm[3] = {2, 3, 4}, dd[2] = {2, 3};
  double *mv = values(24, 0.45), *dv = values(12, 0.85);
  for (int k = 0; k < 7; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    weft_output_t m = feed(g, &f, "m", WEFT_DT_DOUBLE, 3, dm, mv), y = NONE;
    unsigned which = 1u;
    const char *label = "";
    switch (k) {
      case 0: {
        weft_output_t ins[3] = {m, iscalar(g, 1), iscalar(g, 0)};
        y = out_of(op_new(g, "MatrixBandPart", ins, 3), 0);
        label = "MatrixBandPart";
        break;
      }
      case 1: y = op1(g, "MatrixDiagPart", m), label = "MatrixDiagPart"; break;
      case 2:
        y = op2(g, "MatrixSetDiag", m, feed(g, &f, "d", WEFT_DT_DOUBLE, 2, dd, dv));
        which = 3u, label = "MatrixSetDiag";
        break;
      case 3:
      case 5: {
        double k2[2] = {-1, 1};
        weft_output_t ins[3] = {m, ivec(g, 2, k2), cst(g, WEFT_DT_DOUBLE, 0, NULL, k2)};
        label = k == 3 ? "MatrixDiagPartV3" : "MatrixDiagPartV2";
        weft_op_builder_t *b = op_new(g, label, ins, 3);
        if (k == 3) weft_op_set_attr_string(b, "align", "LEFT_RIGHT");
        y = out_of(b, 0);
        break;
      }
      case 4:
      case 6: {
        int64_t d3[3] = {2, 2, 3};
        double k2[2] = {0, 1};
        weft_output_t ins[3] = {m, feed(g, &f, "d", WEFT_DT_DOUBLE, 3, d3, dv), ivec(g, 2, k2)};
        label = k == 4 ? "MatrixSetDiagV3" : "MatrixSetDiagV2";
        weft_op_builder_t *b = op_new(g, label, ins, 3);
        if (k == 4) weft_op_set_attr_string(b, "align", "RIGHT_LEFT");
        y = out_of(b, 0), which = 3u;
        break;
      }
      default: break;
    }
    check_fd(g, &f, y, which, label);
    weft_graph_free(g);
  }
  static const char *const vec_ops[] = {"MatrixDiag", "Diag"};
  for (size_t k = 0; k < G_N_ELEMENTS(vec_ops); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    check_fd(g, &f, op1(g, vec_ops[k], feed(g, &f, "d", WEFT_DT_DOUBLE, 2, dd, dv)), 1u,
             vec_ops[k]);
    weft_graph_free(g);
  }
  {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d4[4] = {2, 3, 2, 3};
    double *v = values(36, 0.6);
    check_fd(g, &f, op1(g, "DiagPart", feed(g, &f, "x", WEFT_DT_DOUBLE, 4, d4, v)), 1u,
             "DiagPart");
    g_free(v);
    weft_graph_free(g);
  }
  for (int v3 = 0; v3 < 2; v3++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    double k2[2] = {-1, 0}, zero = 0;
    int64_t d3[3] = {2, 2, 3};
    weft_output_t ins[5] = {feed(g, &f, "d", WEFT_DT_DOUBLE, 3, d3, dv), ivec(g, 2, k2),
                            iscalar(g, 3), iscalar(g, 3), cst(g, WEFT_DT_DOUBLE, 0, NULL, &zero)};
    const char *op = v3 ? "MatrixDiagV3" : "MatrixDiagV2";
    weft_op_builder_t *b = op_new(g, op, ins, 5);
    if (v3) weft_op_set_attr_string(b, "align", "RIGHT_RIGHT");
    check_fd(g, &f, out_of(b, 0), 1u, op);
    weft_graph_free(g);
  }
  g_free(mv);
  g_free(dv);
}

static void test_rearrangements(void) {
  {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[3] = {3, 4, 2}, dl = 3;
    double *v = values(24, 0.3), lens[3] = {2, 4, 1};
    weft_output_t ins[2] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, v),
                            cst(g, WEFT_DT_INT64, 1, &dl, lens)};
    weft_op_builder_t *b = op_new(g, "ReverseSequence", ins, 2);
    weft_op_set_attr_int(b, "seq_dim", 1);
    weft_op_set_attr_int(b, "batch_dim", 0);
    check_fd(g, &f, out_of(b, 0), 1u, "ReverseSequence");
    g_free(v);
    weft_graph_free(g);
  }
  for (int to_space = 0; to_space < 2; to_space++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[4] = {1, 2, 2, 8};
    if (!to_space) d[1] = d[2] = 4, d[3] = 2;
    double *v = values(32, 0.55);
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, d, v);
    weft_op_builder_t *b = op_new(g, to_space ? "DepthToSpace" : "SpaceToDepth", &x, 1);
    weft_op_set_attr_int(b, "block_size", 2);
    check_fd(g, &f, out_of(b, 0), 1u, to_space ? "DepthToSpace" : "SpaceToDepth");
    g_free(v);
    weft_graph_free(g);
  }
  for (int to_batch = 0; to_batch < 2; to_batch++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[4] = {1, 4, 3, 1}, dp[2] = {2, 2};
    if (!to_batch) d[0] = 4, d[1] = 2, d[2] = 2;
    double *v = values(16, 0.65), block[2] = {2, 2}, pads[4] = {0, 0, 1, 0};
    weft_output_t ins[3] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 4, d, v), ivec(g, 2, block),
                            cst(g, WEFT_DT_INT32, 2, dp, pads)};
    const char *op = to_batch ? "SpaceToBatchND" : "BatchToSpaceND";
    check_fd(g, &f, out_of(op_new(g, op, ins, 3), 0), 1u, op);
    g_free(v);
    weft_graph_free(g);
  }
}

/* The three resizes through their adjoint ops, up and down, each sampling mode. */
static void test_resizes(void) {
  static const int64_t sizes[2][2] = {{5, 7}, {2, 3}};
  static const char *const ops[3] = {"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"};
  for (int kind = 0; kind < 3; kind++)
    for (int s = 0; s < 2; s++)
      for (int mode = 0; mode < 3; mode++) {
        bool nearest = kind == 1;
        weft_graph_t *g = weft_graph_new();
        feeds_t f = {0};
        int64_t d[4] = {2, 3, 4, 2};
        double *v = values(48, 0.35), size[2] = {(double)sizes[s][0], (double)sizes[s][1]};
        /* Bilinear and bicubic compute in float32 whatever the input: checked in float32. */
        weft_dtype_t dt = nearest ? WEFT_DT_DOUBLE : WEFT_DT_FLOAT;
        weft_output_t ins[2] = {feed(g, &f, "x", dt, 4, d, v), ivec(g, 2, size)};
        const char *op = ops[kind];
        weft_op_builder_t *b = op_with_bools(g, op, ins, 2, "align_corners", mode == 1,
                                             "half_pixel_centers", mode == 2);
        weft_output_t y = out_of(b, 0);
        char *label = g_strdup_printf("%s to %dx%d mode %d", op, (int)sizes[s][0],
                                      (int)sizes[s][1], mode);
        check_fd(g, &f, y, 1u, label);
        g_free(label);
        g_free(v);
        weft_graph_free(g);
      }
}

/* CropAndResize w.r.t. image and boxes, bilinear and (image only: its box gradient is the
 * bilinear one, as TensorFlow's) nearest, with a one-row crop and a box partly outside the image
 * (extrapolated samples get no gradient). The boxes keep every sample well inside one pixel
 * cell, so the finite differences stay on one linear piece. */
static void test_crop_and_resize(void) {
  for (int nearest = 0; nearest < 2; nearest++)
    for (int crop_h = 1; crop_h <= 3; crop_h += 2) {
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t di[4] = {2, 5, 6, 2}, db[2] = {3, 4}, nb = 3;
      double *iv = values(120, 0.2);
      double bv[12] = {0.1, 0.12, 0.7, 0.84, 0.35, 0.5, 0.85, 0.9, -0.4, 0.22, 0.6, 0.62};
      double ind[3] = {1, 0, 1}, size[2] = {crop_h, 3};
      weft_output_t ins[4] = {feed(g, &f, "image", WEFT_DT_FLOAT, 4, di, iv),
                              feed(g, &f, "boxes", WEFT_DT_FLOAT, 2, db, bv),
                              cst(g, WEFT_DT_INT32, 1, &nb, ind), ivec(g, 2, size)};
      weft_op_builder_t *b = op_new(g, "CropAndResize", ins, 4);
      if (nearest) weft_op_set_attr_string(b, "method", "nearest");
      char *label = g_strdup_printf("CropAndResize %s crop %dx3", nearest ? "nearest" : "bilinear",
                                    crop_h);
      check_fd(g, &f, out_of(b, 0), nearest ? 1u : 3u, label);
      g_free(label);
      g_free(iv);
      weft_graph_free(g);
    }
}

/* ExtractImagePatches with overlapping, strided, dilated and padded (SAME) patches. */
static void test_extract_patches(void) {
  for (int same = 0; same < 2; same++)
    for (int rate = 1; rate <= 2; rate++) {
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t d[4] = {2, 5, 4, 2};
      double *v = values(80, 0.15);
      weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, d, v);
      weft_op_builder_t *b = op_new(g, "ExtractImagePatches", &x, 1);
      set_ints(b, "ksizes", 1, 2, 3, 1);
      set_ints(b, "strides", 1, 2, 1, 1);
      set_ints(b, "rates", 1, rate, 1, 1);
      weft_op_set_attr_string(b, "padding", same ? "SAME" : "VALID");
      char *label = g_strdup_printf("ExtractImagePatches %s rate %d", same ? "SAME" : "VALID",
                                    rate);
      check_fd(g, &f, out_of(b, 0), 1u, label);
      g_free(label);
      g_free(v);
      weft_graph_free(g);
    }
}

/* Roll with negative and multiple shifts, NthElement (with a tie), PadV2, AccumulateNV2. */
static void test_roll_nth_pad(void) {
  for (int k = 0; k < 4; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[3] = {2, 3, 4};
    double *v = values(24, 0.05);
    if (k == 1) v[5] = v[6]; /* a tie in row 1 */
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, v), y;
    const char *label;
    if (k == 0) {
      double shift[2] = {-1, 5}, axis[2] = {2, 0};
      weft_output_t ins[3] = {x, ivec(g, 2, shift), ivec(g, 2, axis)};
      y = out_of(op_new(g, "Roll", ins, 3), 0), label = "Roll";
    } else if (k == 1) {
      y = op2(g, "NthElement", x, iscalar(g, 2)), label = "NthElement";
    } else if (k == 2) {
      int64_t dp[2] = {3, 2};
      double pads[6] = {1, 0, 0, 2, 1, 1}, fill = 0.25;
      weft_output_t ins[3] = {x, cst(g, WEFT_DT_INT32, 2, dp, pads),
                              cst(g, WEFT_DT_DOUBLE, 0, NULL, &fill)};
      y = out_of(op_new(g, "PadV2", ins, 3), 0), label = "PadV2";
    } else {
      weft_output_t parts[3] = {x, op1(g, "Square", x), x};
      weft_op_builder_t *b = weft_op_new(g, "AccumulateNV2", NULL);
      weft_op_add_input_list(b, parts, 3);
      weft_op_set_attr_shape(b, "shape", 3, d);
      y = out_of(b, 0), label = "AccumulateNV2";
    }
    check_fd(g, &f, y, 1u, label);
    g_free(v);
    weft_graph_free(g);
  }
}

/* The convolution backprop ops as layers: Conv2DBackpropFilter w.r.t. x and dy, and the
 * depthwise backprop ops w.r.t. their two tensor inputs. */
static void test_conv_backprops(void) {
  static const char *const ops[3] = {"Conv2DBackpropFilter", "DepthwiseConv2dNativeBackpropInput",
                                     "DepthwiseConv2dNativeBackpropFilter"};
  for (int k = 0; k < 3; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[4] = {1, 5, 4, 2}, fd[4] = {3, 2, 2, k ? 2 : 3}, dd[4] = {1, 3, 2, k ? 4 : 3};
    double *xv = values(40, 0.1), *fv = values(36, 0.3), *dv = values(24, 0.7);
    double xs[4] = {1, 5, 4, 2}, fs[4] = {3, 2, 2, k ? 2 : 3};
    weft_output_t ins[3];
    if (k == 1) {
      ins[0] = ivec(g, 4, xs);
      ins[1] = feed(g, &f, "w", WEFT_DT_DOUBLE, 4, fd, fv);
    } else {
      ins[0] = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, xd, xv);
      ins[1] = ivec(g, 4, fs);
    }
    ins[2] = feed(g, &f, "d", WEFT_DT_DOUBLE, 4, dd, dv);
    weft_op_builder_t *b = op_new(g, ops[k], ins, 3);
    set_ints(b, "strides", 1, 2, 2, 1);
    weft_op_set_attr_string(b, "padding", "SAME");
    check_fd(g, &f, out_of(b, 0), 3u, ops[k]);
    g_free(xv);
    g_free(fv);
    g_free(dv);
    weft_graph_free(g);
  }
}

/* AvgPoolGrad w.r.t. its gradient input and BiasAddGrad in both layouts: second-order terms. */
static void test_second_order(void) {
  for (int k = 0; k < 3; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    double *v = values(24, 0.45);
    weft_op_builder_t *b;
    if (k == 0) {
      int64_t dd[4] = {1, 3, 3, 2};
      double sizes[4] = {1, 5, 5, 2};
      weft_output_t ins[2] = {ivec(g, 4, sizes), feed(g, &f, "d", WEFT_DT_DOUBLE, 4, dd, v)};
      b = op_new(g, "AvgPoolGrad", ins, 2);
      set_ints(b, "ksize", 1, 3, 3, 1);
      set_ints(b, "strides", 1, 2, 2, 1);
      weft_op_set_attr_string(b, "padding", "SAME");
    } else {
      int64_t d[4] = {2, 3, 2, 2};
      weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, d, v);
      b = op_new(g, "BiasAddGrad", &x, 1);
      weft_op_set_attr_string(b, "data_format", k == 1 ? "NHWC" : "NCHW");
    }
    check_fd(g, &f, out_of(b, 0), 1u, k == 0 ? "AvgPoolGrad" : k == 1 ? "BiasAddGrad NHWC"
                                                                      : "BiasAddGrad NCHW");
    g_free(v);
    weft_graph_free(g);
  }
}

/* MaxPoolWithArgmax, the batch in the indices or not, SAME windows at the edges. */
static void test_max_pool_argmax(void) {
  for (int with_batch = 0; with_batch < 2; with_batch++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[4] = {2, 5, 4, 2};
    double *v = values(80, 0.25);
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, d, v);
    weft_op_builder_t *b = op_with_bools(g, "MaxPoolWithArgmax", &x, 1, "include_batch_in_index",
                                         with_batch, NULL, false);
    set_ints(b, "ksize", 1, 2, 3, 1);
    set_ints(b, "strides", 1, 2, 2, 1);
    weft_op_set_attr_string(b, "padding", "SAME");
    check_fd(g, &f, out_of(b, 0), 1u,
             with_batch ? "MaxPoolWithArgmax batch in index" : "MaxPoolWithArgmax");
    g_free(v);
    weft_graph_free(g);
  }
}

/* The fake quantisations pass dy straight through inside [min, max] and give the bounds what
 * fell outside (finite differences see only the steps, so the values are checked). */
static void test_fake_quant(void) {
  for (int vars = 0; vars < 2; vars++) {
    weft_graph_t *g = weft_graph_new();
    int64_t d = 5;
    weft_status_t *st = NULL;
    weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, &d, &st);
    OK(st);
    double lo = -1, hi = 2;
    weft_output_t ins[3] = {x, cst(g, WEFT_DT_FLOAT, 0, NULL, &lo),
                            cst(g, WEFT_DT_FLOAT, 0, NULL, &hi)};
    weft_op_builder_t *b =
        op_new(g, vars ? "FakeQuantWithMinMaxVars" : "FakeQuantWithMinMaxArgs", ins, vars ? 3 : 1);
    if (!vars) {
      weft_op_set_attr_float(b, "min", -1);
      weft_op_set_attr_float(b, "max", 2);
    }
    weft_output_t y = out_of(b, 0), axes = iscalar(g, 0);
    weft_output_t loss = op2(g, "Sum", op2(g, "Mul", y, cst(g, WEFT_DT_FLOAT, 1, &d,
                                                              (double[]){1, 2, 3, 4, 5})),
                             axes);
    weft_output_t grads[3] = {NONE, NONE, NONE};
    OK(weft_gradients(g, &loss, 1, ins, vars ? 3 : 1, NULL, grads));
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    double xv[5] = {-3, -0.5, 0.5, 1.5, 4};
    feeds_t f = {1, {"x"}, {x}, {tensor(WEFT_DT_FLOAT, 1, &d, xv)}};
    weft_tensor_t *gx = fetch1(s, &f, grads[0]);
    double want[5] = {0, 2, 3, 4, 0};
    for (int i = 0; i < 5; i++) g_assert_cmpfloat(weft_tensor_get_double(gx, i), ==, want[i]);
    weft_tensor_unref(gx);
    if (vars) {
      weft_tensor_t *gmin = fetch1(s, &f, grads[1]), *gmax = fetch1(s, &f, grads[2]);
      g_assert_cmpfloat(weft_tensor_get_double(gmin, 0), ==, 1);
      g_assert_cmpfloat(weft_tensor_get_double(gmax, 0), ==, 5);
      weft_tensor_unref(gmin);
      weft_tensor_unref(gmax);
    }
    weft_tensor_unref(f.t[0]);
    weft_session_free(s);
    weft_graph_free(g);
  }
}

/* A batch of well-conditioned square matrices: 2 I + 0.3 values. */
static double *conditioned(int batch, int n, double seed) {
  double *v = shifted(batch * n * n, seed, 0.0, 0.3);
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < n; i++) v[(b * n + i) * n + i] += 2.0;
  return v;
}

static void test_linalg_square(void) {
  int64_t d[3] = {2, 3, 3};
  for (int k = 0; k < 4; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    double *v = conditioned(2, 3, 0.2 + 0.1 * k);
    if (k == 3)
      for (int i = 0; i < 9; i++) v[i] = -v[i]; /* a negative determinant */
    weft_output_t a = feed(g, &f, "a", WEFT_DT_DOUBLE, 3, d, v), y;
    const char *label;
    if (k < 2) {
      y = out_of(op_with_bools(g, "MatrixInverse", &a, 1, "adjoint", k == 1, NULL, false), 0);
      label = k ? "MatrixInverse adjoint" : "MatrixInverse";
    } else if (k == 2) {
      y = op1(g, "MatrixDeterminant", a), label = "MatrixDeterminant";
    } else {
      y = weft_out(finish(op_new(g, "LogMatrixDeterminant", &a, 1)), 1);
      label = "LogMatrixDeterminant";
    }
    check_fd(g, &f, y, 1u, label);
    g_free(v);
    weft_graph_free(g);
  }
  /* Cholesky of x x^T + 3 I, differentiated w.r.t. x: perturbations stay symmetric. */
  {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    double *v = values(18, 0.9), eye[9] = {3, 0, 0, 0, 3, 0, 0, 0, 3};
    int64_t d2[2] = {3, 3};
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, v);
    weft_output_t ins[2] = {x, x};
    weft_output_t xxt =
        out_of(op_with_bools(g, "BatchMatMulV2", ins, 2, "adj_x", false, "adj_y", true), 0);
    weft_output_t spd = op2(g, "AddV2", xxt, cst(g, WEFT_DT_DOUBLE, 2, d2, eye));
    check_fd(g, &f, op1(g, "Cholesky", spd), 1u, "Cholesky");
    g_free(v);
    weft_graph_free(g);
  }
  for (int k = 0; k < 4; k++) {
    bool triangular = k >= 2, adj = k & 1;
    for (int lower = 0; lower < (triangular ? 2 : 1); lower++) {
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t db[3] = {2, 3, 2};
      double *av = conditioned(2, 3, 0.3), *bv = values(12, 0.75);
      weft_output_t ins[2] = {feed(g, &f, "a", WEFT_DT_DOUBLE, 3, d, av),
                              feed(g, &f, "b", WEFT_DT_DOUBLE, 3, db, bv)};
      const char *op = triangular ? "MatrixTriangularSolve" : "MatrixSolve";
      weft_op_builder_t *b = op_with_bools(g, op, ins, 2, "adjoint", adj,
                                           triangular ? "lower" : NULL, lower);
      char *label = g_strdup_printf("%s adjoint %d lower %d", op, adj, lower);
      check_fd(g, &f, out_of(b, 0), 3u, label);
      g_free(label);
      g_free(av);
      g_free(bv);
      weft_graph_free(g);
    }
  }
}

/* MatrixTriangularSolve broadcasting one matrix over a batch of right-hand sides and a batch
 * of matrices over one right-hand side: each gradient summed back to its input's shape. */
static void test_triangular_broadcast(void) {
  for (int k = 0; k < 2; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t da[3] = {2, 3, 3}, db[3] = {2, 3, 2};
    double *av = conditioned(2, 3, 0.45), *bv = values(12, 0.35);
    weft_output_t ins[2] = {feed(g, &f, "a", WEFT_DT_DOUBLE, k ? 3 : 2, k ? da : da + 1, av),
                            feed(g, &f, "b", WEFT_DT_DOUBLE, k ? 2 : 3, k ? db + 1 : db, bv)};
    weft_op_builder_t *b = op_with_bools(g, "MatrixTriangularSolve", ins, 2, "lower", k == 0,
                                         NULL, false);
    check_fd(g, &f, out_of(b, 0), 3u, k ? "MatrixTriangularSolve batch of a" :
                                          "MatrixTriangularSolve batch of b");
    g_free(av);
    g_free(bv);
    weft_graph_free(g);
  }
}

/* MatrixSolveLs over- and underdetermined, regularised, w.r.t. matrix and rhs. */
static void test_solve_ls(void) {
  for (int wide = 0; wide < 2; wide++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t da[3] = {2, wide ? 2 : 4, wide ? 4 : 2}, db[3] = {2, da[1], 3};
    double *av = values(16, 0.3), *bv = values(db[1] * 6, 0.55), l2 = 0.1;
    weft_output_t ins[3] = {feed(g, &f, "a", WEFT_DT_DOUBLE, 3, da, av),
                            feed(g, &f, "b", WEFT_DT_DOUBLE, 3, db, bv),
                            cst(g, WEFT_DT_DOUBLE, 0, NULL, &l2)};
    check_fd(g, &f, out_of(op_new(g, "MatrixSolveLs", ins, 3), 0), 3u,
             wide ? "MatrixSolveLs underdetermined" : "MatrixSolveLs overdetermined");
    g_free(av);
    g_free(bv);
    weft_graph_free(g);
  }
}

/* values() with 1 + i added at (i, i) of each matrix: full rank, distinct singular values. */
static double *full_rank(const int64_t *d, double seed) {
  double *v = values(d[0] * d[1] * d[2], seed);
  for (int64_t b = 0; b < d[0]; b++)
    for (int64_t i = 0; i < d[1] && i < d[2]; i++) v[(b * d[1] + i) * d[2] + i] += 1.0 + (double)i;
  return v;
}

/* Qr and Svd of tall, square and (Svd) wide batches, each output on its own. */
static void test_decompositions(void) {
  static const int64_t shapes[3][3] = {{2, 4, 3}, {2, 3, 3}, {1, 3, 4}};
  for (int s = 0; s < 3; s++)
    for (int out = 0; out < 3; out++) {
      bool qr = out < 2 && s < 2;
      for (int which_op = 0; which_op < 2; which_op++) {
        if (which_op == 0 && !qr) continue;
        weft_graph_t *g = weft_graph_new();
        feeds_t f = {0};
        double *v = full_rank(shapes[s], 0.05 + 0.1 * s);
        weft_output_t a = feed(g, &f, "a", WEFT_DT_DOUBLE, 3, shapes[s], v);
        const char *op = which_op == 0 ? "Qr" : "Svd";
        weft_output_t y = weft_out(finish(op_new(g, op, &a, 1)), out);
        /* Singular vectors are defined up to sign: their squares are not. */
        if (which_op == 1 && out > 0) y = op1(g, "Square", y);
        char *label = g_strdup_printf("%s [%d,%d] output %d", op, (int)shapes[s][1],
                                      (int)shapes[s][2], out);
        check_fd(g, &f, y, 1u, label);
        g_free(label);
        g_free(v);
        weft_graph_free(g);
      }
    }
  /* full_matrices, the sides one apart: the extra singular vector is determined up to sign. */
  for (int s = 0; s < 3; s++)
    for (int out = 0; out < 3; out++) {
      if (s == 1) continue;
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t d[3] = {shapes[s][0], shapes[s][1], shapes[s][2]};
      if (d[1] > d[2]) d[1] = d[2] + 1;
      double *v = full_rank(d, 0.25);
      weft_output_t a = feed(g, &f, "a", WEFT_DT_DOUBLE, 3, d, v);
      weft_op_builder_t *b = op_with_bools(g, "Svd", &a, 1, "full_matrices", true, NULL, false);
      weft_output_t y = out_of(b, out);
      if (out > 0) y = op1(g, "Square", y);
      char *label = g_strdup_printf("Svd full_matrices [%d,%d] output %d", (int)d[1], (int)d[2],
                                    out);
      check_fd(g, &f, y, 1u, label);
      g_free(label);
      g_free(v);
      weft_graph_free(g);
    }
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  double *v = full_rank(shapes[0], 0.4);
  weft_output_t a = feed(g, &f, "a", WEFT_DT_DOUBLE, 3, shapes[0], v);
  weft_op_builder_t *b = op_with_bools(g, "Svd", &a, 1, "compute_uv", false, NULL, false);
  check_fd(g, &f, out_of(b, 0), 1u, "Svd compute_uv=false");
  g_free(v);
  weft_graph_free(g);
}

/* SelfAdjointEigV2 of x + x^T (so perturbations stay symmetric), each output on its own
 * (the vectors squared: their sign is open), and without compute_v. */
static void test_self_adjoint_eig(void) {
  for (int out = 0; out < 3; out++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[3] = {2, 3, 3};
    double *v = full_rank(d, 0.6);
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, v);
    double perm[3] = {0, 2, 1};
    weft_output_t sym = op2(g, "AddV2", x, op2(g, "Transpose", x, ivec(g, 3, perm)));
    weft_op_builder_t *b = op_with_bools(g, "SelfAdjointEigV2", &sym, 1, "compute_v", out < 2,
                                         NULL, false);
    weft_output_t y = out_of(b, out == 1 ? 1 : 0);
    if (out == 1) y = op1(g, "Square", y);
    check_fd(g, &f, y, 1u, out == 2 ? "SelfAdjointEigV2 e only" : "SelfAdjointEigV2");
    g_free(v);
    weft_graph_free(g);
  }
}

/* full_matrices Qr of a tall matrix and Svd of one whose sides differ by 2: refused as
 * TensorFlow refuses them, naming the op. */
static void test_refused(void) {
  static const char *const ops[2] = {"Qr", "Svd"};
  for (int k = 0; k < 2; k++) {
    weft_graph_t *g = weft_graph_new();
    int64_t d[2] = {k ? 5 : 4, 3};
    weft_status_t *st = NULL;
    weft_output_t a = weft_placeholder(g, "a", WEFT_DT_DOUBLE, 2, d, &st);
    OK(st);
    weft_op_builder_t *b = op_with_bools(g, ops[k], &a, 1, "full_matrices", true, NULL, false);
    weft_output_t loss = loss_of(g, out_of(b, 1)), grad = NONE;
    st = weft_gradients(g, &loss, 1, &a, 1, NULL, &grad);
    g_assert_nonnull(st);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
    g_assert_nonnull(strstr(weft_status_message(st), ops[k]));
    weft_status_free(st);
    weft_graph_free(g);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/more_gradients/cumulative", test_cumulative);
  g_test_add_func("/more_gradients/top_k", test_top_k);
  g_test_add_func("/more_gradients/segments", test_segments);
  g_test_add_func("/more_gradients/segment_prod", test_segment_prod);
  g_test_add_func("/more_gradients/stitch_partition", test_stitch_partition);
  g_test_add_func("/more_gradients/broadcast_clip", test_broadcast_clip);
  g_test_add_func("/more_gradients/math", test_math);
  g_test_add_func("/more_gradients/diagonals", test_diagonals);
  g_test_add_func("/more_gradients/rearrangements", test_rearrangements);
  g_test_add_func("/more_gradients/roll_nth_pad", test_roll_nth_pad);
  g_test_add_func("/more_gradients/conv_backprops", test_conv_backprops);
  g_test_add_func("/more_gradients/second_order", test_second_order);
  g_test_add_func("/more_gradients/max_pool_argmax", test_max_pool_argmax);
  g_test_add_func("/more_gradients/fake_quant", test_fake_quant);
  g_test_add_func("/more_gradients/resizes", test_resizes);
  g_test_add_func("/more_gradients/extract_patches", test_extract_patches);
  g_test_add_func("/more_gradients/crop_and_resize", test_crop_and_resize);
  g_test_add_func("/more_gradients/linalg_square", test_linalg_square);
  g_test_add_func("/more_gradients/triangular_broadcast", test_triangular_broadcast);
  g_test_add_func("/more_gradients/solve_ls", test_solve_ls);
  g_test_add_func("/more_gradients/decompositions", test_decompositions);
  g_test_add_func("/more_gradients/self_adjoint_eig", test_self_adjoint_eig);
  g_test_add_func("/more_gradients/refused", test_refused);
  g_test_add_func("/more_gradients/sparse", test_sparse);
  return g_test_run();
}
