/* onnx/map_math.c: ONNX MatMul (MatMul or BatchMatMulV2, 1-D operands promoted to matrices and
 * the added dimension removed), Gemm (MatMul with transposes, alpha/beta scaling and a bias) and
 * CumSum. */
#include "map.h"

static weft_status_t *map_matmul(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t a = cf_onnx_in(x, node, 0), b = cf_onnx_in(x, node, 1);
  int64_t da[WEFT_MAX_RANK], db[WEFT_MAX_RANK];
  int ra, rb;
  if ((st = cf_onnx_need_shape(x, a, &ra, da)) || (st = cf_onnx_need_shape(x, b, &rb, db)))
    return st;
  /* 1-D operands are promoted to matrices and the added dimension removed afterwards. */
  if (ra == 1) {
    int64_t d[2] = {1, da[0]};
    a = cf_onnx_reshape(x, a, d, 2, &st);
  }
  if (rb == 1) {
    int64_t d[2] = {db[0], 1};
    b = cf_onnx_reshape(x, b, d, 2, &st);
  }
  int ra2 = ra == 1 ? 2 : ra, rb2 = rb == 1 ? 2 : rb;
  weft_output_t r = (ra2 == 2 && rb2 == 2) ? cf_onnx_ew(x, "MatMul", a, b, &st)
                                           : cf_onnx_ew(x, "BatchMatMulV2", a, b, &st);
  if (st) return st;
  if (ra == 1 || rb == 1) {
    int64_t dr[WEFT_MAX_RANK], out[WEFT_MAX_RANK];
    int rr = cf_onnx_shape(r, dr), n = 0;
    for (int d = 0; d < rr; d++) {
      if (ra == 1 && d == rr - 2) continue;
      if (rb == 1 && d == rr - 1) continue;
      out[n++] = dr[d];
    }
    r = cf_onnx_reshape(x, r, out, n, &st);
  }
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_gemm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  double alpha = cf_onnx_attr_float(node, "alpha", 1.0f),
         beta = cf_onnx_attr_float(node, "beta", 1.0f);
  bool ta = cf_onnx_attr_int(node, "transA", 0) != 0, tb = cf_onnx_attr_int(node, "transB", 0) != 0;
  weft_output_t a = cf_onnx_in(x, node, 0), b = cf_onnx_in(x, node, 1), c = cf_onnx_in(x, node, 2);
  if (!a.node || !b.node) return cf_onnx_unsupported(x, "Gemm needs A and B");
  weft_op_builder_t *m = cf_onnx_op(x, "MatMul");
  weft_op_add_input(m, a);
  weft_op_add_input(m, b);
  weft_op_set_attr_bool(m, "transpose_a", ta);
  weft_op_set_attr_bool(m, "transpose_b", tb);
  weft_output_t r = cf_onnx_finish(x, m, &st);
  if (alpha != 1.0) r = cf_onnx_mul_scalar(x, r, alpha, &st);
  if (c.node) {
    if (beta != 1.0) c = cf_onnx_mul_scalar(x, c, beta, &st);
    r = cf_onnx_ew(x, "AddV2", r, c, &st);
  }
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_cumsum(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "Cumsum");
  weft_op_add_input(b, cf_onnx_in(x, node, 0));
  weft_op_add_input(b, cf_onnx_in(x, node, 1));
  weft_op_set_attr_bool(b, "exclusive", cf_onnx_attr_int(node, "exclusive", 0) != 0);
  weft_op_set_attr_bool(b, "reverse", cf_onnx_attr_int(node, "reverse", 0) != 0);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

const cf_onnx_row_t cf_onnx_rows_math[] = {
    {"MatMul", 1, map_matmul},
    {"Gemm", 1, map_gemm},
    {"CumSum", 1, map_cumsum},
    {NULL, 0, NULL},
};
