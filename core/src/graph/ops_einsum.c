/* ops_einsum.c: TensorFlow's Einsum op (tensorflow/core/ops/linalg_ops.cc): inputs N * T, attrs
 * equation, N >= 1, T, and a shape function that checks the equation against the inputs' ranks
 * and dimensions (named labels must agree; the dims under "..." broadcast) the way TensorFlow's
 * EinsumShape does. */
#include "einsum_equation.h"
#include "ops_shape.h"

/* Per input: the dims of its named labels merged into label_dim[], its "..." dims into *ell. */
static weft_status_t *einsum_input(weft_shape_ctx_t *ctx, const char *eq, int i,
                                   const weft__einsum_subs_t *subs, int64_t *label_dim,
                                   weft__shape_t *ell, bool *ell_unknown) {
  weft__shape_t s;
  weft__sh_input(ctx, i, &s);
  const int named = subs->n - (subs->ellipsis ? 1 : 0);
  if (s.rank < 0) {
    if (subs->ellipsis) *ell_unknown = true;
    return NULL;
  }
  if (subs->ellipsis && s.rank < named)
    return weft__sh_error(ctx, "Expected input %d to have rank at least %d but got: %d (einsum "
                          "equation '%s')", i, named, s.rank, eq);
  if (!subs->ellipsis && s.rank != named)
    return weft__sh_error(ctx, "Expected input %d to have rank %d but got: %d (einsum equation "
                          "'%s')", i, named, s.rank, eq);
  const int ell_rank = s.rank - named;
  int axis = 0;
  for (int k = 0; k < subs->n; k++) {
    int l = subs->label[k];
    if (l == WEFT__EINSUM_ELLIPSIS) {
      weft__shape_t mine = {.rank = ell_rank};
      for (int d = 0; d < ell_rank; d++) mine.dims[d] = s.dims[axis + d];
      if (ell->rank < 0) *ell = mine;
      else WEFT_RETURN_IF_ERROR(weft__sh_broadcast(ctx, ell, &mine, ell));
      axis += ell_rank;
      continue;
    }
    if (!weft__sh_merge_dim(label_dim[l], s.dims[axis], &label_dim[l])) {
      char *str = weft__sh_str(&s);
      weft_status_t *st = weft__sh_error(
          ctx, "Expected dimension %lld at axis %d of the input shaped %s but got dimension %lld "
          "(einsum equation '%s')", (long long)label_dim[l], axis, str, (long long)s.dims[axis],
          eq);
      g_free(str);
      return st;
    }
    axis++;
  }
  return NULL;
}

static weft_status_t *einsum_shape(weft_shape_ctx_t *ctx) {
  const char *eq = weft__sh_attr_string(ctx, "equation", "");
  weft__einsum_eq_t e;
  weft_status_t *st = weft__einsum_parse(eq, &e);
  if (st) {
    weft_status_t *named = weft__sh_error(ctx, "%s", weft_status_message(st));
    weft_status_free(st);
    return named;
  }
  const int64_t n = weft__sh_attr_int(ctx, "N", e.n_inputs);
  if (n != e.n_inputs)
    return weft__sh_error(ctx, "Expected %d inputs for equation %s but got: %lld", e.n_inputs,
                          eq, (long long)n);
  int64_t label_dim[WEFT__EINSUM_N_LABELS];
  for (int l = 0; l < WEFT__EINSUM_N_LABELS; l++) label_dim[l] = WEFT_DIM_UNKNOWN;
  weft__shape_t ell = {.rank = -1};
  bool ell_unknown = false;
  for (int i = 0; i < e.n_inputs; i++)
    WEFT_RETURN_IF_ERROR(einsum_input(ctx, eq, i, &e.in[i], label_dim, &ell, &ell_unknown));
  if (ell.rank < 0) ell.rank = 0;
  if (!e.out.ellipsis && !ell_unknown && ell.rank > 0)
    return weft__sh_error(ctx, "Output contains %d broadcasting dimension(s) but no ellipsis "
                          "(...) was found in the output subscripts. (einsum equation '%s')",
                          ell.rank, eq);
  if (e.out.ellipsis && ell_unknown) {
    weft__shape_t out = {.rank = -1};
    return weft__sh_output(ctx, 0, &out);
  }
  const int out_rank = e.out.n - (e.out.ellipsis ? 1 : 0) + (e.out.ellipsis ? ell.rank : 0);
  if (out_rank > WEFT_MAX_RANK)
    return weft__sh_error(ctx, "Einsum's output would have %d dimensions, above %d (equation "
                          "'%s')", out_rank, WEFT_MAX_RANK, eq);
  weft__shape_t out = {.rank = out_rank};
  int axis = 0;
  for (int k = 0; k < e.out.n; k++) {
    int l = e.out.label[k];
    if (l == WEFT__EINSUM_ELLIPSIS)
      for (int d = 0; d < ell.rank; d++) out.dims[axis++] = ell.dims[d];
    else
      out.dims[axis++] = label_dim[l];
  }
  return weft__sh_output(ctx, 0, &out);
}

const weft_op_def_t weft__ops_einsum[] = {
    WEFT__OP("Einsum", WEFT__SPECS("inputs: N * T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("equation: string", "N: int >= 1", "T: type"), 0, einsum_shape),
    WEFT__OPS_END,
};
