/* onnx/builders.c: the small builders every ONNX mapper uses (declared in map.h): output
 * binding, static shapes, elementwise ops that fall back to float32 for 16-bit types the device
 * lacks a kernel for (exact for the correctly rounded ops), scalar Consts, reductions, axes. */
#include "map.h"

void cf_onnx_bind_out(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t k, weft_output_t o) {
  cf_onnx_bind(x, node->output[k], o);
}

bool cf_onnx_has_out(const Onnx__NodeProto *node, size_t k) {
  return k < node->n_output && node->output[k][0] != '\0';
}

weft_status_t *cf_onnx_need_shape(cf_onnx_ctx_t *x, weft_output_t o, int *rank, int64_t *dims) {
  *rank = cf_onnx_shape(o, dims);
  if (*rank < 0) return cf_onnx_unsupported(x, "the input's shape is not known statically");
  for (int d = 0; d < *rank; d++)
    if (dims[d] < 0) return cf_onnx_unsupported(x, "the input's shape is not known statically");
  return NULL;
}

bool cf_onnx_is_f16(weft_dtype_t t) { return t == WEFT_DT_HALF || t == WEFT_DT_BFLOAT16; }

/* op over inputs of one dtype, computed in float32 between Casts when the device has no kernel
 * for the 16-bit dtype. */
weft_output_t cf_onnx_ew(cf_onnx_ctx_t *x, const char *op, weft_output_t a, weft_output_t b,
                         weft_status_t **st) {
  if (*st) return CF_ONNX_NONE;
  if (a.node == NULL) {
    *st = cf_onnx_unsupported(x, "%s: a required input is missing", op);
    return CF_ONNX_NONE;
  }
  weft_dtype_t t = cf_onnx_out_dtype(a);
  if (cf_onnx_is_f16(t) && !cf_onnx_has_kernel(x, op, t) &&
      cf_onnx_has_kernel(x, op, WEFT_DT_FLOAT)) {
    weft_output_t fa = cf_onnx_cast(x, a, WEFT_DT_FLOAT, st);
    weft_output_t fb = b.node ? cf_onnx_cast(x, b, WEFT_DT_FLOAT, st) : CF_ONNX_NONE;
    weft_output_t r = b.node ? cf_onnx_binary(x, op, fa, fb, st) : cf_onnx_unary(x, op, fa, st);
    if (*st) return CF_ONNX_NONE;
    if (cf_onnx_out_dtype(r) != WEFT_DT_FLOAT) return r; /* comparisons give bool */
    return cf_onnx_cast(x, r, t, st);
  }
  return b.node ? cf_onnx_binary(x, op, a, b, st) : cf_onnx_unary(x, op, a, st);
}

weft_output_t cf_onnx_scalar_like(cf_onnx_ctx_t *x, weft_output_t like, double v,
                                  weft_status_t **st) {
  if (*st) return CF_ONNX_NONE;
  return cf_onnx_const_scalar(x, cf_onnx_out_dtype(like), v, st);
}

weft_output_t cf_onnx_mul_scalar(cf_onnx_ctx_t *x, weft_output_t a, double v, weft_status_t **st) {
  return cf_onnx_ew(x, "Mul", a, cf_onnx_scalar_like(x, a, v, st), st);
}

weft_output_t cf_onnx_add_scalar(cf_onnx_ctx_t *x, weft_output_t a, double v, weft_status_t **st) {
  return cf_onnx_ew(x, "AddV2", a, cf_onnx_scalar_like(x, a, v, st), st);
}

weft_output_t cf_onnx_reduce(cf_onnx_ctx_t *x, const char *op, weft_output_t a, const int64_t *axes,
                             int n, bool keep, weft_status_t **st) {
  if (*st) return CF_ONNX_NONE;
  weft_output_t ax = cf_onnx_const_ints(x, WEFT_DT_INT64, axes, n, false, st);
  if (*st) return CF_ONNX_NONE;
  weft_dtype_t t = cf_onnx_out_dtype(a);
  bool promote = cf_onnx_is_f16(t) && !cf_onnx_has_kernel(x, op, t);
  weft_output_t in = promote ? cf_onnx_cast(x, a, WEFT_DT_FLOAT, st) : a;
  if (*st) return CF_ONNX_NONE;
  weft_op_builder_t *b = cf_onnx_op(x, op);
  weft_op_add_input(b, in);
  weft_op_add_input(b, ax);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  weft_output_t r = cf_onnx_finish(x, b, st);
  return promote ? cf_onnx_cast(x, r, t, st) : r;
}

bool cf_onnx_norm_axes(cf_onnx_ctx_t *x, int64_t *axes, int n, int rank, weft_status_t **st) {
  for (int i = 0; i < n; i++) {
    if (axes[i] < 0) axes[i] += rank;
    if (axes[i] < 0 || axes[i] >= rank) {
      *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                            "%s: axis %" G_GINT64_FORMAT
                            " out of range "
                            "for rank %d",
                            x->node_name, axes[i], rank);
      return false;
    }
  }
  return true;
}

int cf_onnx_axes_range(int64_t *axes, int from, int to) {
  int n = 0;
  for (int d = from; d < to; d++) axes[n++] = d;
  return n;
}

bool cf_onnx_ints_arg(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool from_input, size_t i,
                      const char *attr, int64_t **vals, int *n, weft_status_t **st) {
  *vals = NULL;
  *n = 0;
  if (from_input) return !cf_onnx_has_in(node, i) || cf_onnx_in_ints(x, node, i, vals, n, st);
  size_t na = 0;
  const int64_t *a = cf_onnx_attr_ints(node, attr, &na);
  if (na) *vals = g_memdup2(a, sizeof(int64_t) * na);
  *n = (int)na;
  return true;
}
