/* test_nn_gradients.c: weft_gradients of the convolution (2-D and 3-D), pooling (2-D, 3-D,
 * MaxPoolV2, MaxPoolGrad's second order), LRN, MirrorPad, batch norm, strided slice, gather,
 * pack/unpack, Prod, Fill, Einsum, Cross, CTCLoss, extra math and special-math ops, each checked against
 * central finite differences of the forward graph (float64 where the kernels have it, float32
 * with a looser tolerance for FusedBatchNorm), and the backprop kernels MaxPoolGrad,
 * AvgPoolGrad, StridedSliceGrad and FusedBatchNormGrad* against values worked out by hand: ties,
 * SAME edges, every slice mask, training and inference, and their shape errors. */
#include "grad_check.h"

/* ---------------------------------------------------------------------------------------------
 * Gradients against finite differences */

static void test_conv2d(void) {
  static const char *const formats[2] = {"NHWC", "NCHW"};
  for (int nchw = 0; nchw < 2; nchw++)
    for (int depthwise = 0; depthwise < 2; depthwise++) {
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t xd[4] = {2, 5, 4, 2}, fd[4] = {3, 2, 2, depthwise ? 2 : 3};
      if (nchw) xd[1] = 2, xd[2] = 5, xd[3] = 4;
      double *xv = values(80, 0.1), *fv = values(36, 0.4);
      weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, xd, xv);
      weft_output_t w = feed(g, &f, "w", WEFT_DT_DOUBLE, 4, fd, fv);
      weft_output_t ins[2] = {x, w};
      weft_op_builder_t *b =
          op_new(g, depthwise ? "DepthwiseConv2dNative" : "Conv2D", ins, 2);
      if (nchw) set_ints(b, "strides", 1, 1, 2, 1);
      else set_ints(b, "strides", 1, 2, 1, 1);
      weft_op_set_attr_string(b, "padding", depthwise ? "VALID" : "SAME");
      weft_op_set_attr_string(b, "data_format", formats[nchw]);
      weft_output_t y = weft_out(finish(b), 0);
      char *label = g_strdup_printf("%s %s", depthwise ? "DepthwiseConv2dNative" : "Conv2D",
                                    formats[nchw]);
      check_fd(g, &f, y, 3u, label);
      g_free(label);
      g_free(xv);
      g_free(fv);
      weft_graph_free(g);
    }
}

/* Conv2D with EXPLICIT padding and dilations, and MaxPool with EXPLICIT padding: the attrs
 * reach the backprop ops. */
static void test_explicit_padding(void) {
  for (int pool = 0; pool < 2; pool++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[4] = {1, 6, 5, 2}, fd[4] = {2, 3, 2, 2}, pads[8] = {0, 0, 1, 2, 2, 0, 0, 0};
    double *xv = values(60, 0.15), *fv = values(24, 0.65);
    weft_output_t ins[2] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 4, xd, xv), NONE};
    if (!pool) ins[1] = feed(g, &f, "w", WEFT_DT_DOUBLE, 4, fd, fv);
    weft_op_builder_t *b = op_new(g, pool ? "MaxPool" : "Conv2D", ins, pool ? 1 : 2);
    set_ints(b, "strides", 1, 2, 1, 1);
    if (pool) set_ints(b, "ksize", 1, 3, 2, 1);
    else set_ints(b, "dilations", 1, 2, 1, 1);
    weft_op_set_attr_string(b, "padding", "EXPLICIT");
    weft_op_set_attr_int_list(b, "explicit_paddings", pads, 8);
    check_fd(g, &f, weft_out(finish(b), 0), pool ? 1u : 3u,
             pool ? "MaxPool EXPLICIT" : "Conv2D EXPLICIT dilated");
    g_free(xv);
    g_free(fv);
    weft_graph_free(g);
  }
}

/* Conv2DBackpropInput as a layer (a transposed convolution): gradients of filter and dy. */
static void test_conv2d_backprop_input(void) {
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t fd[4] = {3, 3, 2, 3}, dd[4] = {1, 2, 3, 3};
  double *fv = values(54, 0.3), *dv = values(18, 0.8), sizes[4] = {1, 4, 5, 2};
  weft_output_t w = feed(g, &f, "w", WEFT_DT_DOUBLE, 4, fd, fv);
  weft_output_t d = feed(g, &f, "d", WEFT_DT_DOUBLE, 4, dd, dv);
  weft_output_t ins[3] = {ivec(g, 4, sizes), w, d};
  weft_op_builder_t *b = op_new(g, "Conv2DBackpropInput", ins, 3);
  set_ints(b, "strides", 1, 2, 2, 1);
  weft_op_set_attr_string(b, "padding", "SAME");
  check_fd(g, &f, weft_out(finish(b), 0), 3u, "Conv2DBackpropInput");
  g_free(fv);
  g_free(dv);
  weft_graph_free(g);
}

static void test_pools(void) {
  static const char *const formats[2] = {"NHWC", "NCHW"};
  static const char *const pads[2] = {"SAME", "VALID"};
  for (int is_max = 0; is_max < 2; is_max++)
    for (int nchw = 0; nchw < 2; nchw++)
      for (int p = 0; p < 2; p++) {
        weft_graph_t *g = weft_graph_new();
        feeds_t f = {0};
        int64_t xd[4] = {2, 5, 5, 3};
        if (nchw) xd[1] = 3, xd[3] = 5;
        double *xv = values(150, 0.27);
        weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, xd, xv);
        weft_op_builder_t *b = op_new(g, is_max ? "MaxPool" : "AvgPool", &x, 1);
        if (nchw) {
          set_ints(b, "ksize", 1, 1, 3, 2);
          set_ints(b, "strides", 1, 1, 2, 2);
        } else {
          set_ints(b, "ksize", 1, 3, 2, 1);
          set_ints(b, "strides", 1, 2, 2, 1);
        }
        weft_op_set_attr_string(b, "padding", pads[p]);
        weft_op_set_attr_string(b, "data_format", formats[nchw]);
        char *label = g_strdup_printf("%s %s %s", is_max ? "MaxPool" : "AvgPool", formats[nchw],
                                      pads[p]);
        check_fd(g, &f, weft_out(finish(b), 0), 1u, label);
        g_free(label);
        g_free(xv);
        weft_graph_free(g);
      }
}

static void set_ints5(weft_op_builder_t *b, const char *name, const int64_t *v) {
  weft_op_set_attr_int_list(b, name, v, 5);
}

/* Conv3D (NDHWC SAME strided, NCDHW VALID), and its two backprop ops as layers (their
 * gradients are each other and Conv3D). */
static void test_conv3d(void) {
  static const char *const ops[3] = {"Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"};
  for (int k = 0; k < 3; k++)
    for (int cfirst = 0; cfirst < 2; cfirst++) {
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t xd[5] = {2, 3, 4, 3, 2}, fd[5] = {2, 2, 2, 2, 3}, yd[5];
      int64_t st[5] = {1, 2, 1, 2, 1};
      if (cfirst) xd[1] = 2, xd[2] = 3, xd[3] = 4, xd[4] = 3, st[1] = 1, st[2] = 2, st[4] = 2;
      const char *pad = cfirst ? "VALID" : "SAME";
      /* The output's spatial dims: SAME ceil(in / stride), VALID (in - k) / stride + 1. */
      int64_t in_sp[3] = {xd[cfirst ? 2 : 1], xd[cfirst ? 3 : 2], xd[cfirst ? 4 : 3]};
      int64_t s_sp[3] = {st[cfirst ? 2 : 1], st[cfirst ? 3 : 2], st[cfirst ? 4 : 3]};
      yd[0] = 2;
      yd[cfirst ? 1 : 4] = 3;
      for (int i = 0; i < 3; i++)
        yd[(cfirst ? 2 : 1) + i] = cfirst ? (in_sp[i] - fd[i]) / s_sp[i] + 1
                                          : (in_sp[i] + s_sp[i] - 1) / s_sp[i];
      double *xv = values(144, 0.1), *fv = values(48, 0.4), *dv = values(144, 0.7);
      double xs[5], fs[5];
      for (int i = 0; i < 5; i++) xs[i] = (double)xd[i], fs[i] = (double)fd[i];
      weft_output_t ins[3];
      if (k == 0) {
        ins[0] = feed(g, &f, "x", WEFT_DT_DOUBLE, 5, xd, xv);
        ins[1] = feed(g, &f, "w", WEFT_DT_DOUBLE, 5, fd, fv);
      } else if (k == 1) {
        ins[0] = ivec(g, 5, xs);
        ins[1] = feed(g, &f, "w", WEFT_DT_DOUBLE, 5, fd, fv);
        ins[2] = feed(g, &f, "dy", WEFT_DT_DOUBLE, 5, yd, dv);
      } else {
        ins[0] = feed(g, &f, "x", WEFT_DT_DOUBLE, 5, xd, xv);
        ins[1] = ivec(g, 5, fs);
        ins[2] = feed(g, &f, "dy", WEFT_DT_DOUBLE, 5, yd, dv);
      }
      weft_op_builder_t *b = op_new(g, ops[k], ins, k == 0 ? 2 : 3);
      set_ints5(b, "strides", st);
      weft_op_set_attr_string(b, "padding", pad);
      weft_op_set_attr_string(b, "data_format", cfirst ? "NCDHW" : "NDHWC");
      char *label = g_strdup_printf("%s %s", ops[k], cfirst ? "NCDHW" : "NDHWC");
      check_fd(g, &f, weft_out(finish(b), 0), 3u, label);
      g_free(label);
      g_free(xv);
      g_free(fv);
      g_free(dv);
      weft_graph_free(g);
    }
}

/* MaxPool3D (float32: its only wide CPU dtype) and AvgPool3D, SAME and VALID, both layouts. */
static void test_pools3d(void) {
  static const char *const pads[2] = {"SAME", "VALID"};
  for (int is_max = 0; is_max < 2; is_max++)
    for (int cfirst = 0; cfirst < 2; cfirst++)
      for (int p = 0; p < 2; p++) {
        weft_graph_t *g = weft_graph_new();
        feeds_t f = {0};
        int64_t xd[5] = {1, 3, 5, 4, 2}, ks[5] = {1, 2, 3, 2, 1}, st[5] = {1, 1, 2, 2, 1};
        if (cfirst) {
          int64_t x2[5] = {1, 2, 3, 5, 4}, k2[5] = {1, 1, 2, 3, 2}, s2[5] = {1, 1, 1, 2, 2};
          memcpy(xd, x2, sizeof xd);
          memcpy(ks, k2, sizeof ks);
          memcpy(st, s2, sizeof st);
        }
        /* A permutation of values 1/60 apart: float32's differences step by 1e-2, and two
         * window elements closer than that would swap places under the step. */
        double *xv = g_new(double, 120);
        for (int i = 0; i < 120; i++) xv[i] = (double)(i * 37 % 120) / 60.0 - 1.0;
        weft_output_t x =
            feed(g, &f, "x", is_max ? WEFT_DT_FLOAT : WEFT_DT_DOUBLE, 5, xd, xv);
        weft_op_builder_t *b = op_new(g, is_max ? "MaxPool3D" : "AvgPool3D", &x, 1);
        set_ints5(b, "ksize", ks);
        set_ints5(b, "strides", st);
        weft_op_set_attr_string(b, "padding", pads[p]);
        weft_op_set_attr_string(b, "data_format", cfirst ? "NCDHW" : "NDHWC");
        char *label = g_strdup_printf("%s %s %s", is_max ? "MaxPool3D" : "AvgPool3D",
                                      cfirst ? "NCDHW" : "NDHWC", pads[p]);
        check_fd(g, &f, weft_out(finish(b), 0), 1u, label);
        g_free(label);
        g_free(xv);
        weft_graph_free(g);
      }
}

/* LRN (float32 and half are its CPU dtypes), the default attrs and others. */
static void test_lrn(void) {
  for (int attrs = 0; attrs < 2; attrs++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[4] = {2, 2, 3, 7};
    double *xv = values(84, 0.21);
    weft_output_t x = feed(g, &f, "x", WEFT_DT_FLOAT, 4, xd, xv);
    weft_op_builder_t *b = op_new(g, "LRN", &x, 1);
    if (attrs) {
      weft_op_set_attr_int(b, "depth_radius", 2);
      weft_op_set_attr_float(b, "bias", 2.0f);
      weft_op_set_attr_float(b, "alpha", 0.5f);
      weft_op_set_attr_float(b, "beta", 0.75f);
    }
    check_fd(g, &f, weft_out(finish(b), 0), 1u, attrs ? "LRN radius 2" : "LRN defaults");
    g_free(xv);
    weft_graph_free(g);
  }
}

/* MirrorPad, REFLECT and SYMMETRIC: the mirrored borders fold back into the input. */
static void test_mirror_pad(void) {
  for (int sym = 0; sym < 2; sym++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[3] = {3, 4, 2}, pd[2] = {3, 2};
    double *xv = values(24, 0.45), pads[6] = {2, 1, 0, 3, 1, 1};
    weft_output_t ins[2] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 3, xd, xv),
                            cst(g, WEFT_DT_INT32, 2, pd, pads)};
    weft_op_builder_t *b = op_new(g, "MirrorPad", ins, 2);
    weft_op_set_attr_string(b, "mode", sym ? "SYMMETRIC" : "REFLECT");
    check_fd(g, &f, weft_out(finish(b), 0), 1u, sym ? "MirrorPad SYMMETRIC" : "MirrorPad REFLECT");
    g_free(xv);
    weft_graph_free(g);
  }
}

/* MaxPoolV2 (window and strides as inputs), and MaxPoolGrad and MaxPoolGradGrad as layers:
 * their gradients with respect to grad are each other. */
static void test_max_pool_v2_and_grads(void) {
  static const char *const ops[3] = {"MaxPoolV2", "MaxPoolGrad", "MaxPoolGradGrad"};
  for (int k = 0; k < 3; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[4] = {2, 5, 4, 2}, yd[4] = {2, 3, 2, 2};
    double *xv = values(80, 0.52), *gv = values(80, 0.11);
    double ks[4] = {1, 3, 2, 1}, st[4] = {1, 2, 2, 1};
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 4, xd, xv);
    weft_op_builder_t *b;
    if (k == 0) {
      weft_output_t ins[3] = {x, ivec(g, 4, ks), ivec(g, 4, st)};
      b = op_new(g, ops[k], ins, 3);
    } else {
      weft_op_builder_t *pb = op_new(g, "MaxPool", &x, 1);
      set_ints(pb, "ksize", 1, 3, 2, 1);
      set_ints(pb, "strides", 1, 2, 2, 1);
      weft_op_set_attr_string(pb, "padding", "SAME");
      weft_output_t y = weft_out(finish(pb), 0);
      /* MaxPoolGrad's grad is pooled-shaped, MaxPoolGradGrad's input-shaped. */
      weft_output_t d = feed(g, &f, "grad", WEFT_DT_DOUBLE, 4, k == 1 ? yd : xd, gv);
      weft_output_t ins[3] = {x, y, d};
      b = op_new(g, ops[k], ins, 3);
      set_ints(b, "ksize", 1, 3, 2, 1);
      set_ints(b, "strides", 1, 2, 2, 1);
    }
    weft_op_set_attr_string(b, "padding", "SAME");
    check_fd(g, &f, weft_out(finish(b), 0), k == 0 ? 1u : 2u, ops[k]);
    g_free(xv);
    g_free(gv);
    weft_graph_free(g);
  }
}

static void test_fused_batch_norm(void) {
  static const char *const ops[3] = {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"};
  for (int v = 0; v < 3; v++)
    for (int nchw = 0; nchw < 2; nchw++)
      for (int training = 0; training < 2; training++) {
        weft_graph_t *g = weft_graph_new();
        feeds_t f = {0};
        int64_t xd[4] = {2, 3, 2, 2}, cd = 2;
        if (nchw) xd[1] = 2, xd[3] = 3;
        double *xv = values(24, 0.55), sv[2] = {1.3, -0.6}, ov[2] = {0.2, 0.4},
               mv[2] = {0.1, -0.2}, vv[2] = {0.8, 1.7};
        weft_output_t ins[5] = {feed(g, &f, "x", WEFT_DT_FLOAT, 4, xd, xv),
                                feed(g, &f, "scale", WEFT_DT_FLOAT, 1, &cd, sv),
                                feed(g, &f, "offset", WEFT_DT_FLOAT, 1, &cd, ov),
                                cst(g, WEFT_DT_FLOAT, 1, &cd, mv),
                                cst(g, WEFT_DT_FLOAT, 1, &cd, vv)};
        weft_op_builder_t *b = op_new(g, ops[v], ins, 5);
        weft_op_set_attr_bool(b, "is_training", training);
        weft_op_set_attr_float(b, "epsilon", 0.01f);
        weft_op_set_attr_string(b, "data_format", nchw ? "NCHW" : "NHWC");
        char *label = g_strdup_printf("%s %s is_training=%d", ops[v], nchw ? "NCHW" : "NHWC",
                                      training);
        check_fd(g, &f, weft_out(finish(b), 0), 7u, label);
        g_free(label);
        g_free(xv);
        weft_graph_free(g);
      }
}

/* StridedSlice with one spec per mask (and a negative stride). */
static void test_strided_slice(void) {
  typedef struct {
    int n;
    double b[3], e[3], s[3];
    int64_t begin_mask, end_mask, ellipsis, new_axis, shrink;
  } spec_t;
  static const spec_t specs[] = {
      {2, {1, 0}, {3, 4}, {1, 2}, 0, 0, 0, 0, 0},
      {2, {2, 3}, {0, 0}, {-1, -2}, 0, 0, 0, 0, 0},
      {2, {1, 1}, {2, 3}, {1, 1}, 1, 0, 0, 0, 0},
      {2, {1, 1}, {2, 0}, {1, 1}, 0, 2, 0, 0, 0},
      {2, {0, 1}, {0, 3}, {1, 1}, 0, 0, 1, 0, 0},
      {3, {0, 1, 0}, {0, 3, 4}, {1, 1, 1}, 0, 0, 0, 1, 0},
      {2, {-1, 0}, {0, 4}, {1, 1}, 0, 0, 0, 0, 1},
      {3, {1, 0, 1}, {3, 0, 2}, {1, 1, 1}, 0, 0, 2, 0, 4},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(specs); k++) {
    const spec_t *sp = &specs[k];
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[3] = {3, 4, 2};
    double *xv = values(24, 0.9);
    weft_output_t ins[4] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 3, xd, xv), ivec(g, sp->n, sp->b),
                            ivec(g, sp->n, sp->e), ivec(g, sp->n, sp->s)};
    weft_op_builder_t *b = op_new(g, "StridedSlice", ins, 4);
    weft_op_set_attr_int(b, "begin_mask", sp->begin_mask);
    weft_op_set_attr_int(b, "end_mask", sp->end_mask);
    weft_op_set_attr_int(b, "ellipsis_mask", sp->ellipsis);
    weft_op_set_attr_int(b, "new_axis_mask", sp->new_axis);
    weft_op_set_attr_int(b, "shrink_axis_mask", sp->shrink);
    char *label = g_strdup_printf("StridedSlice spec %zu", k);
    check_fd(g, &f, weft_out(finish(b), 0), 1u, label);
    g_free(label);
    g_free(xv);
    weft_graph_free(g);
  }
}

static void test_gather(void) {
  for (int v2 = 0; v2 < 2; v2++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t pd[2] = {4, 3}, id[2] = {2, 2};
    double *pv = values(12, 0.2), iv[4] = {3, 0, 3, 1};
    weft_output_t ins[3] = {feed(g, &f, "params", WEFT_DT_DOUBLE, 2, pd, pv),
                            cst(g, WEFT_DT_INT64, 2, id, iv), iscalar(g, 0)};
    weft_output_t y = weft_out(finish(op_new(g, v2 ? "GatherV2" : "Gather", ins, v2 ? 3 : 2)), 0);
    check_fd(g, &f, y, 1u, v2 ? "GatherV2" : "Gather");
    g_free(pv);
    weft_graph_free(g);
  }
  /* Another axis is refused, naming the node. */
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t pd[2] = {4, 3};
  double *pv = values(12, 0.2), iv[2] = {1, 2};
  weft_output_t p = feed(g, &f, "params", WEFT_DT_DOUBLE, 2, pd, pv);
  weft_output_t ins[3] = {p, ivec(g, 2, iv), iscalar(g, 1)};
  weft_op_builder_t *b = op_new(g, "GatherV2", ins, 3);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  weft_output_t loss = loss_of(g, weft_out(n, 0)), grad = NONE;
  weft_status_t *st = weft_gradients(g, &loss, 1, &p, 1, NULL, &grad);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
  g_assert_nonnull(strstr(weft_status_message(st), weft_node_name(n)));
  weft_status_free(st);
  weft_tensor_unref(f.t[0]);
  g_free(pv);
  weft_graph_free(g);
}

static void test_pack_unpack(void) {
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d[2] = {2, 3};
  double *av = values(6, 0.1), *bv = values(6, 0.7);
  weft_output_t parts[2] = {feed(g, &f, "a", WEFT_DT_DOUBLE, 2, d, av),
                            feed(g, &f, "b", WEFT_DT_DOUBLE, 2, d, bv)};
  weft_op_builder_t *pb = weft_op_new(g, "Pack", NULL);
  weft_op_add_input_list(pb, parts, 2);
  weft_op_set_attr_int(pb, "axis", 1);
  weft_output_t packed = weft_out(finish(pb), 0); /* [2, 2, 3] */
  weft_op_builder_t *ub = op_new(g, "Unpack", &packed, 1);
  weft_op_set_attr_int(ub, "num", 3);
  weft_op_set_attr_int(ub, "axis", 2);
  weft_node_t *un = finish(ub);
  /* Outputs 0 and 2 used, 1 not: its gradient is zeros. */
  weft_output_t y = op2(g, "Mul", weft_out(un, 0), op1(g, "Exp", weft_out(un, 2)));
  check_fd(g, &f, y, 3u, "Pack/Unpack");
  g_free(av);
  g_free(bv);
  weft_graph_free(g);
}

static void test_prod_fill(void) {
  static const double axes_sets[3][2] = {{1, 0}, {0, 2}, {-1, 0}};
  static const int n_axes[3] = {1, 2, 1};
  for (int k = 0; k < 3; k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[3] = {2, 3, 2};
    double *xv = values(12, 0.35);
    xv[4] = 0.0; /* a zero: the product of the others, not y / x */
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 3, d, xv);
    weft_output_t ins[2] = {x, ivec(g, n_axes[k], axes_sets[k])};
    weft_op_builder_t *b = op_new(g, "Prod", ins, 2);
    weft_op_set_attr_bool(b, "keep_dims", k == 2);
    char *label = g_strdup_printf("Prod axes set %d", k);
    check_fd(g, &f, weft_out(finish(b), 0), 1u, label);
    g_free(label);
    g_free(xv);
    weft_graph_free(g);
  }
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  double v = 0.3, dims[2] = {2, 3};
  weft_output_t val = feed(g, &f, "v", WEFT_DT_DOUBLE, 0, NULL, &v);
  weft_output_t y = op2(g, "Fill", ivec(g, 2, dims), val);
  check_fd(g, &f, op2(g, "Mul", y, y), 1u, "Fill");
  weft_graph_free(g);
}

static void test_math(void) {
  typedef struct {
    const char *op;
    double lo, hi;
  } unary_t;
  static const unary_t unary[] = {{"Selu", -2, 2},    {"Asin", -0.9, 0.9}, {"Acos", -0.9, 0.9},
                                  {"Atanh", -0.9, 0.9}, {"Asinh", -3, 3},   {"Acosh", 1.2, 4},
                                  {"Lgamma", 0.3, 5},  {"Digamma", 0.3, 5},
                                  {"Erfinv", -0.9, 0.9},
                                  {"Ndtri", 0.05, 0.95}, {"BesselI0e", -4, 4},
                                  {"BesselI1e", -4, 4}};
  for (size_t k = 0; k < G_N_ELEMENTS(unary); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d = 7;
    double xv[7];
    for (int i = 0; i < 7; i++) xv[i] = unary[k].lo + (unary[k].hi - unary[k].lo) * (i + 0.37) / 7;
    weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 1, &d, xv);
    check_fd(g, &f, op1(g, unary[k].op, x), 1u, unary[k].op);
    weft_graph_free(g);
  }
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d[2] = {2, 3}, d1 = 3;
  double *yv = values(6, 0.45), xv[3] = {0.5, -1.2, 2.0};
  weft_output_t y = feed(g, &f, "y", WEFT_DT_DOUBLE, 2, d, yv);
  weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 1, &d1, xv);
  check_fd(g, &f, op2(g, "Atan2", y, x), 3u, "Atan2 (broadcast)");
  g_free(yv);
  weft_graph_free(g);
}

/* The activations whose gradients are their grad ops (ReluGrad, Relu6Grad, LeakyReluGrad,
 * EluGrad, SeluGrad, as TensorFlow's nn_grad.py builds them), and those ops' own gradients: the
 * gradient of y * y with respect to x, itself differentiated, checked against finite differences
 * (points away from the kinks at 0 and 6). */
static void test_activation_grads(void) {
  static const char *const acts[] = {"Relu", "Relu6", "LeakyRelu", "Elu", "Selu"};
  for (size_t k = 0; k < G_N_ELEMENTS(acts); k++) {
    for (int order = 1; order <= 2; order++) {
      weft_graph_t *g = weft_graph_new();
      feeds_t f = {0};
      int64_t d = 7;
      double xv[7];
      for (int i = 0; i < 7; i++) xv[i] = -2 + 9 * (i + 0.37) / 7;
      weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 1, &d, xv);
      weft_op_builder_t *b = op_new(g, acts[k], &x, 1);
      if (strcmp(acts[k], "LeakyRelu") == 0) weft_op_set_attr_float(b, "alpha", 0.3f);
      weft_output_t y = weft_out(finish(b), 0);
      if (order == 2) {
        weft_output_t sq = op2(g, "Mul", y, y), dx = NONE;
        OK(weft_gradients(g, &sq, 1, &x, 1, NULL, &dx));
        y = dx;
      }
      char *label = g_strdup_printf("%s, order %d", acts[k], order);
      check_fd(g, &f, y, 1u, label);
      g_free(label);
      weft_graph_free(g);
    }
  }
}

/* The special-math gradients of math_grad.py: the zero-guarded ops and MulNoNan broadcast, Zeta
 * and Polygamma differentiate their second input only, CumulativeLogsumexp in each direction. */
static void test_special(void) {
  static const struct {
    const char *op;
    double lo, hi;
  } binary[] = {{"Xlogy", 0.5, 3}, {"Xlog1py", -0.5, 3}, {"Xdivy", 0.5, 3}, {"MulNoNan", -2, 2},
                {"Zeta", 0.5, 3}, {"Polygamma", 0.5, 3}};
  for (size_t k = 0; k < G_N_ELEMENTS(binary); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[2] = {2, 3}, d1 = 3;
    bool second_only = strcmp(binary[k].op, "Zeta") == 0 || strcmp(binary[k].op, "Polygamma") == 0;
    /* Zeta's x above 1 and Polygamma's integer orders; the others any sign, 0 excluded. */
    double av[3] = {2.5, 3, 4.5}, pv[3] = {0, 1, 2}, yv[3];
    double lo = binary[k].lo, span = binary[k].hi - binary[k].lo;
    for (int i = 0; i < 3; i++) yv[i] = lo + span * (i + 0.37) / 3;
    double *xv = values(6, 0.3);
    weft_output_t y;
    if (second_only) {
      weft_output_t a = feed(g, &f, "a", WEFT_DT_DOUBLE, 1, &d1,
                             strcmp(binary[k].op, "Zeta") == 0 ? av : pv);
      for (int i = 0; i < 6; i++) xv[i] = lo + span * (xv[i] + 1) / 2;
      weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv);
      y = op2(g, binary[k].op, a, x);
      weft_output_t loss = loss_of(g, y), none = NONE;
      OK(weft_gradients(g, &loss, 1, &a, 1, NULL, &none));
      g_assert_null(none.node);
    } else {
      weft_output_t x = feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv);
      y = op2(g, binary[k].op, x, feed(g, &f, "y", WEFT_DT_DOUBLE, 1, &d1, yv));
    }
    char *label = g_strdup_printf("%s (broadcast)", binary[k].op);
    check_fd(g, &f, y, second_only ? 2u : 3u, label);
    g_free(label);
    g_free(xv);
    weft_graph_free(g);
  }
  /* Exclusive scans start at -inf, which sin(y) in the loss cannot take: exp(y) goes between. */
  for (int variant = 0; variant < 4; variant++) {
    bool exclusive = variant & 1, reverse = variant & 2;
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t d[2] = {3, 4};
    double *xv = values(12, 0.2);
    weft_output_t ins[2] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 2, d, xv), iscalar(g, variant < 2)};
    weft_op_builder_t *b = op_new(g, "CumulativeLogsumexp", ins, 2);
    weft_op_set_attr_bool(b, "exclusive", exclusive);
    weft_op_set_attr_bool(b, "reverse", reverse);
    weft_output_t y = op1(g, "Exp", weft_out(finish(b), 0));
    char *label = g_strdup_printf("CumulativeLogsumexp exclusive=%d reverse=%d", exclusive,
                                  reverse);
    check_fd(g, &f, y, 1u, label);
    g_free(label);
    g_free(xv);
    weft_graph_free(g);
  }
  /* BesselI1e at (and next to) 0, where the 1/x of the general formula is replaced by the
   * limit 1/2: central differences are off by eps/2 there, so the value is checked directly. */
  weft_graph_t *g = weft_graph_new();
  int64_t d = 2;
  weft_status_t *st = NULL;
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_DOUBLE, 1, &d, &st);
  OK(st);
  weft_output_t loss = op2(g, "Sum", op1(g, "BesselI1e", x), iscalar(g, 0)), grad = NONE;
  OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &grad));
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  double xv[2] = {0, 1e-300};
  feeds_t f = {1, {"x"}, {x}, {tensor(WEFT_DT_DOUBLE, 1, &d, xv)}};
  weft_tensor_t *gt = fetch1(s, &f, grad);
  for (int k = 0; k < 2; k++) g_assert_cmpfloat(weft_tensor_get_double(gt, k), ==, 0.5);
  weft_tensor_unref(gt);
  weft_tensor_unref(f.t[0]);
  weft_session_free(s);
  weft_graph_free(g);
}

/* Einsum's gradient (an einsum of dy with the other operand, summed labels spread back, "..."
 * dims that broadcast summed) for each kind of equation, and Cross's. */
static void test_einsum(void) {
  static const struct {
    const char *eq;
    int n_in;
    int rank[2];
    int64_t dims[2][4];
  } cases[] = {
      {"ij,jk->ik", 2, {2, 2}, {{2, 3}, {3, 4}}},
      {"bij,bjk->bik", 2, {3, 3}, {{2, 2, 3}, {2, 3, 2}}},
      {"i,j->ij", 2, {1, 1}, {{3}, {2}}},
      {"ijk,kl->il", 2, {3, 2}, {{2, 3, 2}, {2, 2}}},
      {"iij,jk->ik", 2, {3, 2}, {{2, 2, 3}, {3, 2}}},
      {"...ij,...jk->...ik", 2, {4, 3}, {{2, 1, 2, 3}, {3, 3, 2}}},
      {"i...j,j->...i", 2, {3, 1}, {{2, 3, 2}, {2}}},
      {"ij->ji", 1, {2}, {{2, 3}}},
      {"ij->", 1, {2}, {{2, 3}}},
      {"ii->i", 1, {2}, {{3, 3}}},
      {"i->ii", 1, {1}, {{3}}},
      {"bii->b", 1, {3}, {{2, 3, 3}}},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    weft_output_t ins[2];
    for (int i = 0; i < cases[k].n_in; i++) {
      int64_t n = 1;
      for (int d = 0; d < cases[k].rank[i]; d++) n *= cases[k].dims[i][d];
      double *v = values(n, 0.2 + 0.3 * i);
      ins[i] = feed(g, &f, i ? "y" : "x", WEFT_DT_DOUBLE, cases[k].rank[i], cases[k].dims[i], v);
      g_free(v);
    }
    weft_op_builder_t *b = weft_op_new(g, "Einsum", NULL);
    weft_op_add_input_list(b, ins, cases[k].n_in);
    weft_op_set_attr_string(b, "equation", cases[k].eq);
    weft_op_set_attr_int(b, "N", cases[k].n_in);
    check_fd(g, &f, weft_out(finish(b), 0), cases[k].n_in == 2 ? 3u : 1u, cases[k].eq);
    weft_graph_free(g);
  }
  weft_graph_t *g = weft_graph_new();
  feeds_t f = {0};
  int64_t d[2] = {2, 3};
  double *av = values(6, 0.1), *bv = values(6, 0.7);
  weft_output_t a = feed(g, &f, "a", WEFT_DT_DOUBLE, 2, d, av);
  weft_output_t bb = feed(g, &f, "b", WEFT_DT_DOUBLE, 2, d, bv);
  check_fd(g, &f, op2(g, "Cross", a, bb), 3u, "Cross");
  g_free(av);
  g_free(bv);
  weft_graph_free(g);
}

/* CTCLoss's gradient (the op's own gradient output scaled by each entry's loss gradient, as
 * TensorFlow's _CTCLossGrad) against central differences of the loss, with a repeated label,
 * entries of different lengths, and repeats merged or not. */
static void test_ctc_loss(void) {
  for (int merge = 0; merge < 2; merge++) {
    weft_graph_t *g = weft_graph_new();
    feeds_t f = {0};
    int64_t xd[3] = {5, 2, 4}, id[2] = {5, 2}, n = 5;
    double *xv = values(40, 0.3 + 0.2 * merge);
    /* Entry 0: labels 1 1 2 over 5 steps; entry 1: label 0 over 3 steps. */
    const double idx[10] = {0, 0, 0, 1, 0, 2, 1, 0, 1, 1}, lab[5] = {1, 1, 2, 0, 0};
    const double len[2] = {5, 3};
    weft_output_t ins[4] = {feed(g, &f, "x", WEFT_DT_DOUBLE, 3, xd, xv),
                            cst(g, WEFT_DT_INT64, 2, id, idx), cst(g, WEFT_DT_INT32, 1, &n, lab),
                            ivec(g, 2, len)};
    weft_op_builder_t *b = op_new(g, "CTCLoss", ins, 4);
    weft_op_set_attr_bool(b, "ctc_merge_repeated", merge != 0);
    check_fd(g, &f, weft_out(finish(b), 0), 1u, merge ? "CTCLoss merged" : "CTCLoss unmerged");
    g_free(xv);
    weft_graph_free(g);
  }
}

/* Floor, Sign, FloorDiv, Greater...: Floor's gradient is none (x gets nothing through it), Sign's
 * zeros. */
static void test_not_differentiable(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t d = 3;
  weft_status_t *st = NULL;
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_DOUBLE, 1, &d, &st);
  OK(st);
  weft_output_t y = op2(g, "AddV2", op1(g, "Floor", x), op1(g, "Sign", x));
  y = op2(g, "AddV2", y, op1(g, "Round", op1(g, "Ceil", x)));
  /* FloorDiv and the comparisons: TensorFlow's NotDifferentiable, no error either. */
  weft_output_t two = cst(g, WEFT_DT_DOUBLE, 0, NULL, (double[]){2.0});
  weft_op_builder_t *cb = op_new(g, "Cast", (weft_output_t[]){op2(g, "Greater", x, two)}, 1);
  weft_op_set_attr_type(cb, "DstT", WEFT_DT_DOUBLE);
  y = op2(g, "AddV2", y, op2(g, "AddV2", op2(g, "FloorDiv", x, two), weft_out(finish(cb), 0)));
  weft_output_t loss = loss_of(g, y), grad = NONE;
  OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &grad));
  g_assert_nonnull(grad.node);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  double xv[3] = {0.5, -1.5, 2.25};
  feeds_t f = {1, {"x"}, {x}, {tensor(WEFT_DT_DOUBLE, 1, &d, xv)}};
  weft_tensor_t *gt = fetch1(s, &f, grad);
  for (int k = 0; k < 3; k++) g_assert_cmpfloat(weft_tensor_get_double(gt, k), ==, 0.0);
  weft_tensor_unref(gt);
  weft_tensor_unref(f.t[0]);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * The backprop kernels against hand-computed values */

static weft_tensor_t *run_node(weft_graph_t *g, weft_op_builder_t *b, int index,
                               weft_status_t **st_out) {
  weft_node_t *n = finish(b);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  feeds_t none = {0};
  char *name = g_strdup_printf("%s:%d", weft_node_name(n), index);
  const char *fetch = name;
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, none.names, none.t, 0, &fetch, &out, 1, NULL, 0);
  g_free(name);
  weft_session_free(s);
  if (st_out) *st_out = st;
  else OK(st);
  return out;
}

static void expect(weft_tensor_t *t, const double *want, int64_t n, double tol, const char *label) {
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  for (int64_t k = 0; k < n; k++)
    if (fabs(weft_tensor_get_double(t, k) - want[k]) > tol)
      g_error("%s: [%" G_GINT64_FORMAT "] = %.9g, want %.9g", label, k,
              weft_tensor_get_double(t, k), want[k]);
  weft_tensor_unref(t);
}

static void test_max_pool_grad_ties(void) {
  for (int nchw = 0; nchw < 2; nchw++) {
    weft_graph_t *g = weft_graph_new();
    /* One 2x4 plane, windows 2x2 stride 2: [1 1 | 3 2; 1 1 | 3 3]. First max in row order. */
    int64_t xd[4] = {1, 2, 4, 1}, yd[4] = {1, 1, 2, 1};
    if (nchw) xd[1] = 1, xd[2] = 2, xd[3] = 4, yd[1] = 1, yd[2] = 1, yd[3] = 2;
    double xv[8] = {1, 1, 3, 2, 1, 1, 3, 3}, yv[2] = {1, 3}, gv[2] = {5, 7};
    weft_output_t ins[3] = {cst(g, WEFT_DT_DOUBLE, 4, xd, xv), cst(g, WEFT_DT_DOUBLE, 4, yd, yv),
                            cst(g, WEFT_DT_DOUBLE, 4, yd, gv)};
    weft_op_builder_t *b = op_new(g, "MaxPoolGrad", ins, 3);
    if (nchw) {
      set_ints(b, "ksize", 1, 1, 2, 2);
      set_ints(b, "strides", 1, 1, 2, 2);
      weft_op_set_attr_string(b, "data_format", "NCHW");
    } else {
      set_ints(b, "ksize", 1, 2, 2, 1);
      set_ints(b, "strides", 1, 2, 2, 1);
    }
    weft_op_set_attr_string(b, "padding", "VALID");
    double want[8] = {5, 0, 7, 0, 0, 0, 0, 0};
    expect(run_node(g, b, 0, NULL), want, 8, 0, "MaxPoolGrad ties");
    weft_graph_free(g);
  }
  /* orig_output and grad agreeing but not pooled from orig_input: the kernel's error names the
   * op and both shapes. */
  weft_graph_t *g = weft_graph_new();
  int64_t xd[4] = {1, 2, 4, 1}, yd[4] = {1, 1, 3, 1}, bad[4] = {1, 1, 3, 1};
  double z[8] = {0};
  weft_output_t ins[3] = {cst(g, WEFT_DT_FLOAT, 4, xd, z), cst(g, WEFT_DT_FLOAT, 4, yd, z),
                          cst(g, WEFT_DT_FLOAT, 4, bad, z)};
  weft_op_builder_t *b = op_new(g, "MaxPoolGrad", ins, 3);
  set_ints(b, "ksize", 1, 2, 2, 1);
  set_ints(b, "strides", 1, 2, 2, 1);
  weft_op_set_attr_string(b, "padding", "VALID");
  weft_node_t *n = NULL;
  weft_status_t *st = weft_op_finish(b, &n);
  if (!st) {
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    char *name = g_strdup_printf("%s:0", weft_node_name(n));
    const char *fetch = name;
    weft_tensor_t *out = NULL;
    st = weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0);
    g_free(name);
    weft_session_free(s);
  }
  g_assert_nonnull(st);
  g_assert_nonnull(strstr(weft_status_message(st), "MaxPoolGrad"));
  g_assert_nonnull(strstr(weft_status_message(st), "[1,1,3,1]"));
  g_assert_nonnull(strstr(weft_status_message(st), "[1,1,2,1]"));
  weft_status_free(st);
  weft_graph_free(g);
}

static void test_avg_pool_grad_same(void) {
  weft_graph_t *g = weft_graph_new();
  /* 3x3 input, 2x2 windows stride 2 SAME: the padding goes after, so the windows hold 4, 2, 2
   * and 1 elements. */
  double shape[4] = {1, 3, 3, 1}, gv[4] = {8, 4, 2, 3};
  int64_t gd[4] = {1, 2, 2, 1};
  weft_output_t ins[2] = {ivec(g, 4, shape), cst(g, WEFT_DT_FLOAT, 4, gd, gv)};
  weft_op_builder_t *b = op_new(g, "AvgPoolGrad", ins, 2);
  set_ints(b, "ksize", 1, 2, 2, 1);
  set_ints(b, "strides", 1, 2, 2, 1);
  weft_op_set_attr_string(b, "padding", "SAME");
  double want[9] = {2, 2, 2, 2, 2, 2, 1, 1, 3};
  expect(run_node(g, b, 0, NULL), want, 9, 1e-6, "AvgPoolGrad SAME");
  weft_graph_free(g);
}

/* StridedSliceGrad of x [3, 4]: dy = 1, 2, ... scattered where each spec's slice reads. */
static void test_strided_slice_grad(void) {
  typedef struct {
    int n;
    double b[3], e[3], s[3];
    int64_t masks[5]; /* begin, end, ellipsis, new_axis, shrink */
    int64_t dy_rank, dy_dims[3];
    double want[12];
  } case_t;
  static const char *const mask_names[5] = {"begin_mask", "end_mask", "ellipsis_mask",
                                            "new_axis_mask", "shrink_axis_mask"};
  static const case_t cases[] = {
      /* x[1:3, ::2] */
      {2, {1, 0}, {3, 4}, {1, 2}, {0}, 2, {2, 2}, {0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0}},
      /* x[:2, 1:3] by begin_mask, end 2 */
      {2, {9, 1}, {2, 3}, {1, 1}, {1, 0, 0, 0, 0}, 2, {2, 2}, {0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0}},
      /* x[2:, ::-3] by end_mask on both */
      {2, {2, 3}, {0, 0}, {1, -3}, {0, 3, 0, 0, 0}, 2, {1, 2},
       {0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1}},
      /* x[..., 1] shrinking the last dim */
      {2, {0, 1}, {0, 2}, {1, 1}, {0, 0, 1, 0, 2}, 1, {3}, {0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0}},
      /* x[newaxis, -1] */
      {2, {0, -1}, {0, 0}, {1, 1}, {0, 0, 0, 1, 2}, 2, {1, 4},
       {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const case_t *c = &cases[k];
    weft_graph_t *g = weft_graph_new();
    double shape[2] = {3, 4}, dyv[4] = {1, 2, 3, 4};
    weft_output_t ins[5] = {ivec(g, 2, shape), ivec(g, c->n, c->b), ivec(g, c->n, c->e),
                            ivec(g, c->n, c->s),
                            cst(g, WEFT_DT_DOUBLE, (int)c->dy_rank, c->dy_dims, dyv)};
    weft_op_builder_t *b = op_new(g, "StridedSliceGrad", ins, 5);
    for (int m = 0; m < 5; m++) weft_op_set_attr_int(b, mask_names[m], c->masks[m]);
    char *label = g_strdup_printf("StridedSliceGrad case %zu", k);
    expect(run_node(g, b, 0, NULL), c->want, 12, 0, label);
    g_free(label);
    weft_graph_free(g);
  }
  /* dy of the wrong shape: TensorFlow's message. */
  weft_graph_t *g = weft_graph_new();
  double shape[2] = {3, 4}, bb[2] = {0, 0}, ee[2] = {2, 2}, ss[2] = {1, 1}, dyv[4] = {0};
  int64_t dd[2] = {1, 4};
  weft_output_t ins[5] = {ivec(g, 2, shape), ivec(g, 2, bb), ivec(g, 2, ee), ivec(g, 2, ss),
                          cst(g, WEFT_DT_DOUBLE, 2, dd, dyv)};
  weft_status_t *st = NULL;
  weft_tensor_t *t = run_node(g, op_new(g, "StridedSliceGrad", ins, 5), 0, &st);
  g_assert_null(t);
  g_assert_nonnull(st);
  g_assert_nonnull(strstr(weft_status_message(st), "shape of dy was [1,4] instead of [2,2]"));
  weft_status_free(st);
  weft_graph_free(g);
}

/* x = 1, 2, 3, 4 in one channel, scale 2, dy = 1, 0, 0, 0, epsilon 0: mean 2.5, variance 1.25. */
static void test_fused_batch_norm_grad(void) {
  for (int training = 0; training < 2; training++)
    for (int v3 = 0; v3 < 2; v3++) {
      weft_graph_t *g = weft_graph_new();
      int64_t xd[4] = {4, 1, 1, 1}, cd = 1;
      double xv[4] = {1, 2, 3, 4}, dyv[4] = {1, 0, 0, 0}, sc = 2, m = 2.5, var = 1.25, r3 = 0;
      weft_output_t ins[6] = {cst(g, WEFT_DT_FLOAT, 4, xd, dyv), cst(g, WEFT_DT_FLOAT, 4, xd, xv),
                              cst(g, WEFT_DT_FLOAT, 1, &cd, &sc), cst(g, WEFT_DT_FLOAT, 1, &cd, &m),
                              cst(g, WEFT_DT_FLOAT, 1, &cd, &var),
                              cst(g, WEFT_DT_FLOAT, 0, NULL, &r3)};
      weft_op_builder_t *b =
          op_new(g, v3 ? "FusedBatchNormGradV3" : "FusedBatchNormGrad", ins, v3 ? 6 : 5);
      weft_op_set_attr_float(b, "epsilon", 0.0f);
      weft_op_set_attr_bool(b, "is_training", training);
      weft_node_t *n = finish(b);
      weft_status_t *st = NULL;
      weft_session_t *s = weft_session_new(g, NULL, &st);
      OK(st);
      char *names[3];
      const char *fetch[3];
      for (int i = 0; i < 3; i++)
        fetch[i] = names[i] = g_strdup_printf("%s:%d", weft_node_name(n), i);
      weft_tensor_t *out[3] = {NULL, NULL, NULL};
      OK(weft_session_run(s, NULL, NULL, 0, fetch, out, 3, NULL, 0));
      double r = 1 / sqrt(1.25);
      /* xc = -1.5, -0.5, 0.5, 1.5; sum(dy) = 1, sum(dy xc) = -1.5. */
      double dx[4];
      for (int i = 0; i < 4; i++) {
        double xc = xv[i] - 2.5;
        dx[i] = training ? 2 * r * (dyv[i] - 0.25 - xc * r * r * (-1.5) / 4) : 2 * r * dyv[i];
      }
      double dscale = -1.5 * r, doffset = 1;
      expect(out[0], dx, 4, 1e-5, "FusedBatchNormGrad x_backprop");
      expect(out[1], &dscale, 1, 1e-5, "FusedBatchNormGrad scale_backprop");
      expect(out[2], &doffset, 1, 1e-6, "FusedBatchNormGrad offset_backprop");
      for (int i = 0; i < 3; i++) g_free(names[i]);
      weft_session_free(s);
      weft_graph_free(g);
    }
  /* scale with the wrong number of channels. */
  weft_graph_t *g = weft_graph_new();
  int64_t xd[4] = {4, 1, 1, 2}, cd = 3;
  double z[8] = {0};
  weft_output_t ins[5] = {cst(g, WEFT_DT_FLOAT, 4, xd, z), cst(g, WEFT_DT_FLOAT, 4, xd, z),
                          cst(g, WEFT_DT_FLOAT, 1, &cd, z), cst(g, WEFT_DT_FLOAT, 1, &cd, z),
                          cst(g, WEFT_DT_FLOAT, 1, &cd, z)};
  weft_node_t *n = NULL;
  weft_status_t *st = weft_op_finish(op_new(g, "FusedBatchNormGrad", ins, 5), &n);
  g_assert_nonnull(st);
  g_assert_nonnull(strstr(weft_status_message(st), "FusedBatchNormGrad"));
  weft_status_free(st);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/nn_gradients/conv2d", test_conv2d);
  g_test_add_func("/nn_gradients/explicit_padding", test_explicit_padding);
  g_test_add_func("/nn_gradients/conv2d_backprop_input", test_conv2d_backprop_input);
  g_test_add_func("/nn_gradients/pools", test_pools);
  g_test_add_func("/nn_gradients/conv3d", test_conv3d);
  g_test_add_func("/nn_gradients/pools3d", test_pools3d);
  g_test_add_func("/nn_gradients/lrn", test_lrn);
  g_test_add_func("/nn_gradients/mirror_pad", test_mirror_pad);
  g_test_add_func("/nn_gradients/max_pool_v2_and_grads", test_max_pool_v2_and_grads);
  g_test_add_func("/nn_gradients/fused_batch_norm", test_fused_batch_norm);
  g_test_add_func("/nn_gradients/strided_slice", test_strided_slice);
  g_test_add_func("/nn_gradients/gather", test_gather);
  g_test_add_func("/nn_gradients/pack_unpack", test_pack_unpack);
  g_test_add_func("/nn_gradients/prod_fill", test_prod_fill);
  g_test_add_func("/nn_gradients/math", test_math);
  g_test_add_func("/nn_gradients/special", test_special);
  g_test_add_func("/nn_gradients/activation_grads", test_activation_grads);
  g_test_add_func("/nn_gradients/einsum_cross", test_einsum);
  g_test_add_func("/nn_gradients/ctc_loss", test_ctc_loss);
  g_test_add_func("/nn_gradients/not_differentiable", test_not_differentiable);
  g_test_add_func("/nn_gradients/max_pool_grad_ties", test_max_pool_grad_ties);
  g_test_add_func("/nn_gradients/avg_pool_grad_same", test_avg_pool_grad_same);
  g_test_add_func("/nn_gradients/strided_slice_grad", test_strided_slice_grad);
  g_test_add_func("/nn_gradients/fused_batch_norm_grad", test_fused_batch_norm_grad);
  return g_test_run();
}
