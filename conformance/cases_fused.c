/* cases_fused.c: conformance cases of TensorFlow's contraction fusions as its grappler remapper
 * writes them into optimized graphs: _FusedMatMul (BiasAdd, then optionally Relu, Relu6, Elu,
 * LeakyRelu, Tanh or Sigmoid), _FusedConv2D and _FusedDepthwiseConv2dNative (BiasAdd or
 * FusedBatchNorm, then optionally an activation), float32, against the unfused ops' references
 * in double precision; and the errors of fusions and arguments the kernels do not take. */
#include <math.h>
#include <string.h>

#include "reference.h"

/* The epilogue in double over the last dimension of y (in place): per channel o,
 * y = y * scale[o] + bias[o] (scale NULL: 1), then the activation. */
static void epilogue_ref(cf_array_t *y, const double *scale, const double *bias, const char *act,
                         double alpha) {
  int64_t ch = y->rank > 0 ? y->dims[y->rank - 1] : 1;
  for (int64_t i = 0; i < y->n; i++) {
    int64_t o = i % ch;
    double v = y->v[i] * (scale ? scale[o] : 1) + bias[o];
    if (!act)
      ;
    else if (strcmp(act, "Relu") == 0)
      v = v > 0 ? v : 0;
    else if (strcmp(act, "Relu6") == 0)
      v = v < 0 ? 0 : v > 6 ? 6 : v;
    else if (strcmp(act, "Elu") == 0)
      v = v < 0 ? expm1(v) : v;
    else if (strcmp(act, "LeakyRelu") == 0)
      v = v < 0 ? alpha * v : v;
    else if (strcmp(act, "Tanh") == 0)
      v = tanh(v);
    else
      v = 1 / (1 + exp(-v));
    y->v[i] = v;
  }
}

/* fused_ops = [first, act] (act NULL: [first]) and num_args; the args inputs as one list. */
static void set_fusion(cf_case_t *c, const char *first, const char *act, int num_args) {
  const char *ops[2] = {first, act};
  cf_case_attr_strings(c, "fused_ops", ops, act ? 2 : 1);
  cf_case_attr_int(c, "num_args", num_args);
  int lens[3] = {0, 0, num_args};
  cf_case_args(c, 3, lens);
}

/* ---------------------------------------------------------------------------------------------
 * _FusedMatMul */

typedef struct mm_spec {
  const char *name;
  int64_t m, k, n;
  bool ta, tb;
  const char *act;
} mm_spec_t;

static const mm_spec_t mm_cases[] = {
    {"bias", 3, 4, 5, false, false, NULL},
    {"bias_relu_odd", 17, 33, 9, false, false, "Relu"},
    {"bias_relu6_transpose_a", 8, 12, 7, true, false, "Relu6"},
    {"bias_elu_transpose_b", 5, 9, 11, false, true, "Elu"},
    {"bias_leakyrelu", 6, 10, 4, true, true, "LeakyRelu"},
    {"bias_tanh", 9, 16, 13, false, false, "Tanh"},
    {"bias_sigmoid", 4, 7, 30, false, false, "Sigmoid"},
    {"bias_relu_one_row", 1, 64, 48, false, false, "Relu"},
    {"bias_relu_k_empty", 3, 0, 5, false, false, "Relu"},
    {"bias_relu_large", 130, 300, 70, false, false, "Relu"},
};

static void emit_fused_matmul(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  for (size_t i = 0; i < G_N_ELEMENTS(mm_cases); i++) {
    const mm_spec_t *s = &mm_cases[i];
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t ad[2] = {s->ta ? s->k : s->m, s->ta ? s->m : s->k};
    int64_t bd[2] = {s->tb ? s->n : s->k, s->tb ? s->k : s->n};
    cf_array_t *a = cf_gen_uniform(&rng, dt, 2, ad, -1, 1);
    cf_array_t *b = cf_gen_uniform(&rng, dt, 2, bd, -1, 1);
    cf_array_t *bias = cf_gen_uniform(&rng, dt, 1, &s->n, -1, 1);
    cf_array_t *want = cf_ref_matmul(a, b, s->ta, s->tb);
    epilogue_ref(want, NULL, bias->v, s->act, 0.3);
    cf_case_expect(c, want);
    cf_case_input(c, a);
    cf_case_input(c, b);
    cf_case_input(c, bias);
    set_fusion(c, "BiasAdd", s->act, 1);
    cf_case_attr_bool(c, "transpose_a", s->ta);
    cf_case_attr_bool(c, "transpose_b", s->tb);
    cf_case_attr_float(c, "leakyrelu_alpha", 0.3);
    c->tol.atol += 4 * c->tol.rtol * (double)s->k;
    cf_run_case(ctx, c);
  }
  /* What TensorFlow's CPU kernel refuses too: a fusion it has no kernel for, and arguments that
   * do not match fused_ops or the output. */
  static const struct {
    const char *name, *first, *act;
    int num_args;
    int64_t bias_n;
    weft_code_t code;
    const char *message;
  } errors[] = {
      {"unsupported_activation", "BiasAdd", "Selu", 1, 5, WEFT_UNIMPLEMENTED,
       "_FusedMatMul: fusion is not implemented: [BiasAdd, Selu]"},
      {"batch_norm", "FusedBatchNorm", NULL, 4, 5, WEFT_UNIMPLEMENTED,
       "_FusedMatMul: fusion is not implemented: [FusedBatchNorm]"},
      {"two_args_for_bias", "BiasAdd", "Relu", 2, 5, WEFT_INVALID_ARGUMENT,
       "_FusedMatMul: BiasAdd takes 1 extra argument, not 2"},
      {"bias_wrong_size", "BiasAdd", "Relu", 1, 4, WEFT_INVALID_ARGUMENT,
       "_FusedMatMul: bias must be a float vector of 5 values (the output's channels), got "
       "float32 [4]"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(errors); i++) {
    cf_case_t *c = cf_case_new(op, errors[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t ad[2] = {3, 4}, bd[2] = {4, 5};
    cf_case_input(c, cf_gen_uniform(&rng, dt, 2, ad, -1, 1));
    cf_case_input(c, cf_gen_uniform(&rng, dt, 2, bd, -1, 1));
    for (int k = 0; k < errors[i].num_args; k++)
      cf_case_input(c, cf_gen_uniform(&rng, dt, 1, &errors[i].bias_n, 0.5, 1));
    set_fusion(c, errors[i].first, errors[i].act, errors[i].num_args);
    cf_case_expect_error(c, errors[i].code, errors[i].message);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * _FusedConv2D, _FusedDepthwiseConv2dNative */

typedef struct fconv_spec {
  const char *name;
  int64_t in[4];     /* N, H, W, C */
  int64_t filter[4]; /* KH, KW, C, M (depthwise: multiplier) */
  int64_t stride, dilation;
  const char *padding;
  bool batch_norm;
  const char *act;
} fconv_spec_t;

static const fconv_spec_t conv_cases[] = {
    {"bias_relu_same", {1, 7, 9, 3}, {3, 3, 3, 5}, 1, 1, "SAME", false, "Relu"},
    {"bias_valid_stride2", {2, 9, 8, 4}, {3, 2, 4, 6}, 2, 1, "VALID", false, NULL},
    {"bias_elu_1x1", {2, 5, 5, 8}, {1, 1, 8, 7}, 1, 1, "VALID", false, "Elu"},
    {"bias_sigmoid_dilated", {1, 10, 10, 2}, {3, 3, 2, 4}, 1, 2, "SAME", false, "Sigmoid"},
    {"batch_norm", {1, 6, 6, 3}, {3, 3, 3, 4}, 1, 1, "SAME", true, NULL},
    {"batch_norm_relu6", {2, 11, 7, 5}, {5, 3, 5, 6}, 2, 1, "SAME", true, "Relu6"},
    {"bias_leakyrelu_tanh_odd", {1, 13, 17, 7}, {3, 5, 7, 9}, 1, 1, "VALID", false, "LeakyRelu"},
    {"bias_tanh_large", {1, 30, 30, 16}, {3, 3, 16, 24}, 1, 1, "SAME", false, "Tanh"},
    /* The direct NHWC loop's epilogue (few taps and filters: plugins/cpu/cpu_conv_nchw.c). */
    {"direct_bias_relu6_2x2_batch64", {64, 5, 5, 2}, {2, 2, 2, 3}, 1, 1, "SAME", false, "Relu6"},
    {"direct_batch_norm_sigmoid_1d", {3, 1, 9, 2}, {1, 2, 2, 4}, 2, 1, "SAME", true, "Sigmoid"},
    {"direct_bias_elu_dilated_m8", {2, 6, 7, 3}, {2, 2, 3, 8}, 1, 2, "VALID", false, "Elu"},
    /* The direct few-tap kernel (plugins/cpu/cpu_convd_avx512.c): bias and Relu / Relu6 in its
     * registers, a batch norm's scale and Elu over each finished row after. */
    {"fewtaps_bias_relu_m64", {1, 9, 31, 3}, {3, 3, 3, 64}, 1, 1, "SAME", false, "Relu"},
    {"fewtaps_bias_relu6_stride2_m80", {2, 8, 13, 3}, {3, 3, 3, 80}, 2, 1, "SAME", false,
     "Relu6"},
    {"fewtaps_batch_norm_relu_valid_m32", {1, 7, 21, 4}, {3, 3, 4, 32}, 1, 1, "VALID", true,
     "Relu"},
    {"fewtaps_bias_elu_m16", {1, 6, 25, 1}, {3, 3, 1, 16}, 1, 1, "SAME", false, "Elu"},
    {"fewtaps_bias_m24_fallback", {1, 6, 11, 3}, {3, 3, 3, 24}, 1, 1, "SAME", false, "Relu"},
    /* Winograd's F(2x2, 3x3) (plugins/cpu/cpu_conv_winograd.c) with the epilogue on each tile's
     * pixels. */
    {"winograd_bias_relu_18x17_m32", {2, 18, 17, 32}, {3, 3, 32, 32}, 1, 1, "SAME", false,
     "Relu"},
    {"winograd_batch_norm_elu_valid_m64", {2, 15, 12, 48}, {3, 3, 48, 64}, 1, 1, "VALID", true,
     "Elu"},
};

static const fconv_spec_t depthwise_cases[] = {
    {"bias_relu", {1, 8, 8, 4}, {3, 3, 4, 1}, 1, 1, "SAME", false, "Relu"},
    {"bias_multiplier2_stride2", {2, 9, 7, 3}, {3, 3, 3, 2}, 2, 1, "SAME", false, "Relu6"},
    {"batch_norm_relu", {1, 7, 7, 6}, {3, 3, 6, 1}, 1, 1, "VALID", true, "Relu"},
    {"batch_norm", {1, 5, 6, 4}, {3, 3, 4, 2}, 1, 1, "SAME", true, NULL},
    {"bias_sigmoid_dilated", {1, 9, 9, 2}, {3, 3, 2, 1}, 1, 2, "SAME", false, "Sigmoid"},
    /* The register loop's channel blocks with Relu / Relu6 applied before its store. */
    {"bias_relu_c83", {1, 6, 13, 83}, {3, 3, 83, 1}, 1, 1, "SAME", false, "Relu"},
    {"bias_relu6_mult2_c53", {2, 5, 6, 53}, {3, 3, 53, 2}, 1, 1, "SAME", false, "Relu6"},
    {"batch_norm_relu6_mult2_c53", {1, 5, 5, 53}, {3, 3, 53, 2}, 1, 1, "SAME", true, "Relu6"},
    {"bias_tanh_mult2_c37", {1, 5, 6, 37}, {3, 3, 37, 2}, 2, 1, "VALID", false, "Tanh"},
};

static void emit_fused_conv(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool depthwise = strstr(op, "Depthwise") != NULL;
  const fconv_spec_t *specs = depthwise ? depthwise_cases : conv_cases;
  size_t n_specs = depthwise ? G_N_ELEMENTS(depthwise_cases) : G_N_ELEMENTS(conv_cases);
  for (size_t i = 0; i < n_specs; i++) {
    const fconv_spec_t *s = &specs[i];
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t oc = depthwise ? s->filter[2] * s->filter[3] : s->filter[3];
    cf_array_t *x = cf_gen_uniform(&rng, dt, 4, s->in, -1, 1);
    cf_array_t *f = cf_gen_uniform(&rng, dt, 4, s->filter, -1, 1);
    /* A depthwise filter [kh, kw, C, m] is the grouped filter [kh, kw, 1, C*m] (groups = C). */
    int64_t grouped[4] = {s->filter[0], s->filter[1], 1, oc};
    cf_array_t *gf = depthwise ? cf_array_reshape(f, 4, grouped) : NULL;
    cf_window_t w = {{s->filter[0], s->filter[1]}, {s->stride, s->stride},
                     {s->dilation, s->dilation}, {0, 0}, {0, 0}, false};
    cf_window_resolve(&w, s->padding, s->in + 1);
    cf_array_t *want = cf_ref_conv2d(x, gf ? gf : f, &w);
    cf_array_free(gf);
    int num_args = s->batch_norm ? 4 : 1;
    cf_array_t *args[4];
    for (int k = 0; k < num_args; k++)
      args[k] = cf_gen_uniform(&rng, dt, 1, &oc, k == 3 ? 0.25 : -1, k == 3 ? 2 : 1);
    double *scale = g_new(double, oc), *bias = g_new(double, oc);
    for (int64_t o = 0; o < oc; o++) {
      if (s->batch_norm) {
        scale[o] = args[0]->v[o] / sqrt(args[3]->v[o] + 1e-3);
        bias[o] = args[1]->v[o] - args[2]->v[o] * scale[o];
      } else {
        scale[o] = 1;
        bias[o] = args[0]->v[o];
      }
    }
    epilogue_ref(want, scale, bias, s->act, 0.2);
    g_free(scale);
    g_free(bias);
    cf_case_expect(c, want);
    cf_case_input(c, x);
    cf_case_input(c, f);
    for (int k = 0; k < num_args; k++) cf_case_input(c, args[k]);
    set_fusion(c, s->batch_norm ? "FusedBatchNorm" : "BiasAdd", s->act, num_args);
    int64_t strides[4] = {1, s->stride, s->stride, 1}, dil[4] = {1, s->dilation, s->dilation, 1};
    cf_case_attr_ints(c, "strides", strides, 4);
    cf_case_attr_ints(c, "dilations", dil, 4);
    cf_case_attr_string(c, "padding", s->padding);
    if (s->batch_norm) cf_case_attr_float(c, "epsilon", 1e-3);
    double k = (double)(s->filter[0] * s->filter[1] * (depthwise ? 1 : s->filter[2]));
    c->tol.atol += 8 * c->tol.rtol * k;
    cf_run_case(ctx, c);
  }
  /* A fused op with the wrong number of batch norm arguments, and an unknown fusion. */
  cf_case_t *c = cf_case_new(op, "batch_norm_two_args", dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  int64_t xd[4] = {1, 4, 4, 2}, fd[4] = {3, 3, 2, 2}, oc = depthwise ? 4 : 2;
  cf_case_input(c, cf_gen_uniform(&rng, dt, 4, xd, -1, 1));
  cf_case_input(c, cf_gen_uniform(&rng, dt, 4, fd, -1, 1));
  for (int k = 0; k < 2; k++) cf_case_input(c, cf_gen_uniform(&rng, dt, 1, &oc, 0.5, 1));
  set_fusion(c, "FusedBatchNorm", "Relu", 2);
  int64_t ones[4] = {1, 1, 1, 1};
  cf_case_attr_ints(c, "strides", ones, 4);
  cf_case_attr_string(c, "padding", "SAME");
  char *msg = g_strdup_printf("%s: FusedBatchNorm takes 4 extra arguments, not 2", op);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
  g_free(msg);
  cf_run_case(ctx, c);
}

static const weft_dtype_t fused_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_INVALID};

const cf_suite_t cf_suites_fused[] = {
    {"_FusedMatMul", fused_dtypes, emit_fused_matmul, NULL},
    {"_FusedConv2D", fused_dtypes, emit_fused_conv, NULL},
    {"_FusedDepthwiseConv2dNative", fused_dtypes, emit_fused_conv, NULL},
    {NULL, NULL, NULL, NULL},
};
