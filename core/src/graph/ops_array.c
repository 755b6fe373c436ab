/* ops_array.c: the standard array ops (Const, Placeholder, Reshape, Transpose, ConcatV2, Pack,
 * StridedSlice, Gather, Split, Pad, Cast, ...) with TensorFlow's names, input order, attrs and
 * defaults, and their shape functions. Constant inputs (shapes, axes, permutations) are read
 * through shape_input_const; when they are not constant the affected dims become unknown. */
#include <math.h>
#include <string.h>

#include "ops_shape.h"

static const weft__shape_t kUnknownShape = {.rank = -1};

/* The length of a 1-D input: from its constant value or its static shape; -1 if unknown. */
static int64_t vector_length(weft_shape_ctx_t *ctx, int index) {
  weft__shape_t s;
  weft__sh_input(ctx, index, &s);
  if (s.rank == 1) return s.dims[0];
  if (s.rank == 0) return 1;
  return -1;
}

static weft_status_t *rank_too_big(weft_shape_ctx_t *ctx, int64_t rank) {
  return weft__sh_error(ctx, "the output would have rank %" G_GINT64_FORMAT
                        ", above the maximum %d", rank, WEFT_MAX_RANK);
}

/* A constant scalar input (a scalar or a one-element vector); false if not constant. */
static bool const_scalar(weft_shape_ctx_t *ctx, int index, int64_t *out, bool *not_single) {
  int64_t *vals = NULL, n = 0;
  *not_single = false;
  if (!weft__sh_const_ints(ctx, index, &vals, &n, NULL)) return false;
  if (n != 1) {
    *not_single = true;
    g_free(vals);
    return false;
  }
  *out = vals[0];
  g_free(vals);
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * Sources */

static weft_status_t *const_shape(weft_shape_ctx_t *ctx) {
  const weft_host_t *h = weft__graph_host();
  weft_tensor_view_t view;
  memset(&view, 0, sizeof view);
  view.struct_size = sizeof view;
  weft_status_t *status = h->attr_tensor(h->shape_attrs(ctx), "value", &view);
  if (status) {
    weft_status_t *named = weft__sh_error(ctx, "%s", h->status_message(status));
    h->status_free(status);
    return named;
  }
  /* The output's dtype comes from the "dtype" attr, the tensor from "value": a GraphDef (or a
   * hand-made node) where they disagree would only fail when a kernel reads the value, as
   * INTERNAL, far from its cause. The op def already requires "dtype"; absent, that check
   * speaks. */
  weft_dtype_t declared = WEFT_DT_INVALID;
  status = h->attr_type(h->shape_attrs(ctx), "dtype", &declared);
  if (status) {
    h->status_free(status);
  } else if (declared != view.dtype) {
    return weft__sh_error(ctx, "Const's attr 'dtype' is %s, but its attr 'value' holds a "
                          "tensor of %s", weft_dtype_name(declared), weft_dtype_name(view.dtype));
  }
  weft__shape_t s = {.rank = view.rank};
  for (int i = 0; i < view.rank && i < WEFT_MAX_RANK; i++) s.dims[i] = view.dims[i];
  return weft__sh_output(ctx, 0, &s);
}

/* The "shape" attr, or unknown rank when it is absent. */
static weft__shape_t shape_attr(weft_shape_ctx_t *ctx, const char *name) {
  const weft_host_t *h = weft__graph_host();
  weft__shape_t s = {.rank = -1};
  weft_status_t *status = h->attr_shape(h->shape_attrs(ctx), name, &s.rank, s.dims);
  if (status) {
    h->status_free(status);
    s.rank = -1;
  }
  return s;
}

static weft_status_t *placeholder_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s = shape_attr(ctx, "shape");
  return weft__sh_output(ctx, 0, &s);
}

static weft_status_t *placeholder_with_default_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t declared = shape_attr(ctx, "shape");
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  if (declared.rank < 0) return weft__sh_output(ctx, 0, &in);
  /* The default value must fit the declared shape, which may be less specific than it. */
  bool ok = in.rank < 0 || in.rank == declared.rank;
  for (int i = 0; ok && in.rank >= 0 && i < in.rank; i++)
    ok = declared.dims[i] < 0 || in.dims[i] < 0 || declared.dims[i] == in.dims[i];
  if (!ok) {
    char *a = weft__sh_str(&in), *b = weft__sh_str(&declared);
    weft_status_t *status =
        weft__sh_error(ctx, "the default value's shape %s is not compatible with shape %s", a, b);
    g_free(a);
    g_free(b);
    return status;
  }
  return weft__sh_output(ctx, 0, &declared);
}

/* ---------------------------------------------------------------------------------------------
 * Reshaping */

static weft_status_t *reshape_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t *vals = NULL, n = 0;
  int rank = 0;
  if (!weft__sh_const_ints(ctx, 1, &vals, &n, &rank)) {
    weft__shape_t out;
    WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 1, &out));
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  weft__shape_t out = {.rank = (int)n};
  int infer = -1;
  int64_t product = 1;
  if (rank > 1) {
    status = weft__sh_error(ctx, "shape must be a vector, but has rank %d", rank);
    goto out;
  }
  if (n > WEFT_MAX_RANK) {
    status = rank_too_big(ctx, n);
    goto out;
  }
  for (int i = 0; i < (int)n; i++) {
    if (vals[i] == -1) {
      if (infer >= 0) {
        status = weft__sh_error(ctx, "only one input size may be -1, not both %d and %d", infer,
                                i);
        goto out;
      }
      infer = i;
      out.dims[i] = WEFT_DIM_UNKNOWN;
    } else if (vals[i] < 0) {
      status = weft__sh_error(ctx, "size %d must be non-negative, not %" G_GINT64_FORMAT, i,
                              vals[i]);
      goto out;
    } else {
      out.dims[i] = vals[i];
      if (__builtin_mul_overflow(product, vals[i], &product)) {
        status = weft__sh_error(ctx, "the requested shape has more than 2^63 elements");
        goto out;
      }
    }
  }
  int64_t in_elems = weft__shape_num_elements(in.rank, in.dims);
  if (in_elems >= 0) {
    char *target = NULL;
    if (infer >= 0) {
      if (product == 0) {
        if (in_elems != 0) {
          target = weft__sh_str(&out);
          status = weft__sh_error(ctx, "Cannot reshape a tensor with %" G_GINT64_FORMAT
                                  " elements to shape %s: the other sizes multiply to 0",
                                  in_elems, target);
        }
      } else if (in_elems % product != 0) {
        target = weft__sh_str(&out);
        status = weft__sh_error(ctx, "Input to reshape is a tensor with %" G_GINT64_FORMAT
                                " values, but the requested shape %s requires a multiple of %"
                                G_GINT64_FORMAT, in_elems, target, product);
      } else {
        out.dims[infer] = in_elems / product;
      }
    } else if (in_elems != product) {
      target = weft__sh_str(&out);
      status = weft__sh_error(ctx, "Cannot reshape a tensor with %" G_GINT64_FORMAT
                              " elements to shape %s (%" G_GINT64_FORMAT " elements)",
                              in_elems, target, product);
    }
    g_free(target);
  }
  if (status == NULL) status = weft__sh_output(ctx, 0, &out);
out:
  g_free(vals);
  return status;
}

static weft_status_t *transpose_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t *perm = NULL, n = 0;
  if (!weft__sh_const_ints(ctx, 1, &perm, &n, NULL)) {
    int64_t len = vector_length(ctx, 1);
    int rank = in.rank >= 0 ? in.rank : (len >= 0 && len <= WEFT_MAX_RANK ? (int)len : -1);
    /* With one dimension or none, every permutation is the identity. */
    if (in.rank >= 0 && in.rank <= 1) return weft__sh_output(ctx, 0, &in);
    weft__shape_t out = weft__sh_unknown_dims(rank);
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  if (in.rank >= 0 && n != in.rank) {
    status = weft__sh_error(ctx, "transpose expects a vector of size %d, but perm has %"
                            G_GINT64_FORMAT " elements", in.rank, n);
    goto out;
  }
  if (n > WEFT_MAX_RANK) {
    status = rank_too_big(ctx, n);
    goto out;
  }
  bool seen[WEFT_MAX_RANK] = {false};
  weft__shape_t out = {.rank = (int)n};
  for (int i = 0; i < (int)n; i++) {
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) {
      status = weft__sh_error(ctx, "perm is not a permutation of 0..%d: perm[%d] is %"
                              G_GINT64_FORMAT, (int)n - 1, i, perm[i]);
      goto out;
    }
    seen[perm[i]] = true;
    out.dims[i] = in.rank >= 0 ? in.dims[perm[i]] : WEFT_DIM_UNKNOWN;
  }
  status = weft__sh_output(ctx, 0, &out);
out:
  g_free(perm);
  return status;
}

static weft_status_t *concat_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx) - 1; /* the last input is the axis */
  weft__shape_t first = kUnknownShape;
  int first_index = -1;
  for (int i = 0; i < n; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    if (s.rank < 0) continue;
    if (first.rank < 0) {
      first = s;
      first_index = i;
    } else if (s.rank != first.rank) {
      char *a = weft__sh_str(&first), *b = weft__sh_str(&s);
      weft_status_t *status = weft__sh_error(
          ctx, "Shape must be rank %d but is rank %d: inputs %d and %d have shapes %s and %s",
          first.rank, s.rank, first_index, i, a, b);
      g_free(a);
      g_free(b);
      return status;
    }
  }
  if (first.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  if (first.rank == 0)
    return weft__sh_error(ctx, "Can't concatenate scalars (use Pack instead)");
  int64_t axis_value;
  bool not_single;
  if (!const_scalar(ctx, n, &axis_value, &not_single)) {
    if (not_single) return weft__sh_error(ctx, "axis must be a scalar");
    weft__shape_t out = weft__sh_unknown_dims(first.rank);
    return weft__sh_output(ctx, 0, &out);
  }
  int axis;
  WEFT_RETURN_IF_ERROR(weft__sh_axis(ctx, axis_value, first.rank, "ConcatV2 axis", &axis));
  weft__shape_t out = first;
  out.dims[axis] = 0;
  for (int i = 0; i < n; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    if (s.rank < 0) {
      out.dims[axis] = WEFT_DIM_UNKNOWN;
      continue;
    }
    for (int d = 0; d < s.rank; d++) {
      if (d == axis) {
        if (s.dims[d] < 0 || out.dims[axis] < 0)
          out.dims[axis] = WEFT_DIM_UNKNOWN;
        else if (__builtin_add_overflow(out.dims[axis], s.dims[d], &out.dims[axis]))
          return weft__sh_error(ctx, "the concatenated dimension overflows int64");
      } else if (!weft__sh_merge_dim(out.dims[d], s.dims[d], &out.dims[d])) {
        char *a = weft__sh_str(&first), *b = weft__sh_str(&s);
        weft_status_t *status = weft__sh_error(
            ctx, "Dimension %d in both shapes must be equal, but are %" G_GINT64_FORMAT
            " and %" G_GINT64_FORMAT ". Shapes are %s and %s (inputs %d and %d)",
            d, out.dims[d], s.dims[d], a, b, first_index, i);
        g_free(a);
        g_free(b);
        return status;
      }
    }
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *pack_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx);
  weft__shape_t merged = kUnknownShape;
  for (int i = 0; i < n; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    char what[48];
    g_snprintf(what, sizeof what, "Pack inputs 0 and %d", i);
    WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &merged, &s, &merged, what));
  }
  if (merged.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  if (merged.rank + 1 > WEFT_MAX_RANK) return rank_too_big(ctx, merged.rank + 1);
  int axis;
  WEFT_RETURN_IF_ERROR(
      weft__sh_axis(ctx, weft__sh_attr_int(ctx, "axis", 0), merged.rank + 1, "Pack axis", &axis));
  weft__shape_t out = {.rank = merged.rank + 1};
  for (int d = 0, src = 0; d < out.rank; d++)
    out.dims[d] = d == axis ? n : merged.dims[src++];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *unpack_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t num = weft__sh_attr_int(ctx, "num", 0);
  weft__shape_t out = kUnknownShape;
  if (in.rank >= 0) {
    if (in.rank == 0)
      return weft__sh_error(ctx, "Unpack needs an input of rank >= 1, not a scalar");
    int axis;
    WEFT_RETURN_IF_ERROR(
        weft__sh_axis(ctx, weft__sh_attr_int(ctx, "axis", 0), in.rank, "Unpack axis", &axis));
    if (in.dims[axis] >= 0 && in.dims[axis] != num) {
      char *str = weft__sh_str(&in);
      weft_status_t *status = weft__sh_error(
          ctx, "Dimension %d of %s must be num = %" G_GINT64_FORMAT " but is %" G_GINT64_FORMAT,
          axis, str, num, in.dims[axis]);
      g_free(str);
      return status;
    }
    out.rank = in.rank - 1;
    for (int d = 0, dst = 0; d < in.rank; d++)
      if (d != axis) out.dims[dst++] = in.dims[d];
  }
  for (int64_t i = 0; i < num; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)i, &out));
  return NULL;
}

static weft_status_t *fill_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t value;
  weft__sh_input(ctx, 1, &value);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &value, 0, "Fill's value"));
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 0, &out));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *shape_of_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  weft__shape_t out = {.rank = 1, .dims = {in.rank >= 0 ? in.rank : WEFT_DIM_UNKNOWN}};
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *shape_n_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx);
  for (int i = 0; i < n; i++) {
    weft__shape_t in;
    weft__sh_input(ctx, i, &in);
    weft__shape_t out = {.rank = 1, .dims = {in.rank >= 0 ? in.rank : WEFT_DIM_UNKNOWN}};
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, &out));
  }
  return NULL;
}

/* ConcatOffset: offset i has shape i's shape (a vector). */
static weft_status_t *concat_offset_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t dim;
  weft__sh_input(ctx, 0, &dim);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &dim, 0, "concat_dim"));
  int n = weft__graph_host()->shape_num_inputs(ctx);
  for (int i = 1; i < n; i++) {
    weft__shape_t in;
    weft__sh_input(ctx, i, &in);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 1, "shape"));
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i - 1, &in));
  }
  return NULL;
}

static weft_status_t *expand_dims_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  if (in.rank + 1 > WEFT_MAX_RANK) return rank_too_big(ctx, in.rank + 1);
  int64_t dim;
  bool not_single;
  if (!const_scalar(ctx, 1, &dim, &not_single)) {
    if (not_single) return weft__sh_error(ctx, "'dim' must be a tensor with a single value");
    weft__shape_t out = weft__sh_unknown_dims(in.rank + 1);
    return weft__sh_output(ctx, 0, &out);
  }
  if (dim < -in.rank - 1 || dim > in.rank)
    return weft__sh_error(ctx, "Tried to expand dim index %" G_GINT64_FORMAT
                          " for tensor with %d dimensions (allowed [%d, %d])",
                          dim, in.rank, -in.rank - 1, in.rank);
  int at = (int)(dim < 0 ? dim + in.rank + 1 : dim);
  weft__shape_t out = {.rank = in.rank + 1};
  for (int d = 0, src = 0; d < out.rank; d++) out.dims[d] = d == at ? 1 : in.dims[src++];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *squeeze_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  const int64_t *sq = NULL;
  size_t n_sq = 0;
  weft__sh_attr_int_list(ctx, "squeeze_dims", &sq, &n_sq);
  bool drop[WEFT_MAX_RANK] = {false};
  if (n_sq == 0) {
    for (int d = 0; d < in.rank; d++) {
      /* An unknown dim may or may not be 1, so the output rank is unknown. */
      if (in.dims[d] < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
      drop[d] = in.dims[d] == 1;
    }
  } else {
    for (size_t k = 0; k < n_sq; k++) {
      if (sq[k] < -in.rank || sq[k] >= in.rank)
        return weft__sh_error(ctx, "Tried to squeeze dim index %" G_GINT64_FORMAT
                              " for tensor with %d dimensions", sq[k], in.rank);
      int d = (int)(sq[k] < 0 ? sq[k] + in.rank : sq[k]);
      if (in.dims[d] >= 0 && in.dims[d] != 1) {
        char *str = weft__sh_str(&in);
        weft_status_t *status = weft__sh_error(
            ctx, "Can not squeeze dim[%d], expected a dimension of 1, got %" G_GINT64_FORMAT
            " (input shape %s)", d, in.dims[d], str);
        g_free(str);
        return status;
      }
      drop[d] = true;
    }
  }
  weft__shape_t out = {.rank = 0};
  for (int d = 0; d < in.rank; d++)
    if (!drop[d]) out.dims[out.rank++] = in.dims[d];
  return weft__sh_output(ctx, 0, &out);
}

/* ---------------------------------------------------------------------------------------------
 * Slicing */

static weft_status_t *slice_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t *begin = NULL, *size = NULL, nb = -1, ns = -1;
  bool has_begin = weft__sh_const_ints(ctx, 1, &begin, &nb, NULL);
  bool has_size = weft__sh_const_ints(ctx, 2, &size, &ns, NULL);
  if (!has_begin) nb = vector_length(ctx, 1);
  if (!has_size) ns = vector_length(ctx, 2);
  weft_status_t *status = NULL;
  int64_t n = nb >= 0 ? nb : ns;
  if ((nb >= 0 && ns >= 0 && nb != ns) || (in.rank >= 0 && n >= 0 && n != in.rank)) {
    char *str = weft__sh_str(&in);
    status = weft__sh_error(ctx, "Expected begin and size arguments to be 1-D tensors of size %d"
                            " (the rank of input %s), but got %" G_GINT64_FORMAT " and %"
                            G_GINT64_FORMAT " elements", in.rank, str, nb, ns);
    g_free(str);
    goto out;
  }
  int rank = in.rank >= 0 ? in.rank : (n >= 0 && n <= WEFT_MAX_RANK ? (int)n : -1);
  weft__shape_t result = weft__sh_unknown_dims(rank);
  for (int i = 0; i < rank && has_size; i++) {
    int64_t dim = in.rank >= 0 ? in.dims[i] : WEFT_DIM_UNKNOWN;
    int64_t b = has_begin ? begin[i] : -1;
    if (size[i] < -1 || (has_begin && b < 0)) {
      status = weft__sh_error(ctx, "Expected begin[%d] >= 0 and size[%d] >= -1, but got %"
                              G_GINT64_FORMAT " and %" G_GINT64_FORMAT, i, i, b, size[i]);
      goto out;
    }
    if (size[i] == -1) {
      if (has_begin && dim >= 0) {
        if (b > dim) {
          status = weft__sh_error(ctx, "Expected begin[%d] in [0, %" G_GINT64_FORMAT
                                  "], but got %" G_GINT64_FORMAT, i, dim, b);
          goto out;
        }
        result.dims[i] = dim - b;
      }
    } else {
      if (has_begin && dim >= 0 && (b > dim || size[i] > dim - b)) {
        status = weft__sh_error(ctx, "Expected begin[%d] in [0, %" G_GINT64_FORMAT
                                "] and size[%d] in [0, %" G_GINT64_FORMAT "], but got %"
                                G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
                                i, dim, i, dim - b, b, size[i]);
        goto out;
      }
      result.dims[i] = size[i];
    }
  }
  status = weft__sh_output(ctx, 0, &result);
out:
  g_free(begin);
  g_free(size);
  return status;
}

/* One dense dimension of a strided slice. Unknown values are marked by known_* = false. */
typedef struct {
  bool known_begin, known_end, known_stride;
  int64_t begin, end, stride;
  bool begin_masked, end_masked, shrink;
} ss_dim_t;

static weft_status_t *ss_dense_dim(weft_shape_ctx_t *ctx, int d, int64_t dim, const ss_dim_t *s,
                                   bool *keep, int64_t *out) {
  if (s->known_stride && s->stride == 0)
    return weft__sh_error(ctx, "strides for dimension %d must be non-zero", d);
  if (s->shrink) {
    *keep = false;
    if (s->known_begin && dim >= 0) {
      int64_t x = s->begin < 0 ? (s->begin < -dim ? -1 : s->begin + dim) : s->begin;
      if (x < 0 || x >= dim)
        return weft__sh_error(ctx, "slice index %" G_GINT64_FORMAT " of dimension %d out of "
                              "bounds (size %" G_GINT64_FORMAT ")", s->begin, d, dim);
    }
    return NULL;
  }
  *keep = true;
  *out = WEFT_DIM_UNKNOWN;
  if (dim < 0 || !s->known_stride) return NULL;
  int64_t stride = s->stride;
  int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
  int64_t b, e;
  if (s->begin_masked) {
    b = stride > 0 ? 0 : dim - 1;
  } else if (s->known_begin) {
    b = s->begin < 0 ? (s->begin < -dim ? lo : s->begin + dim) : s->begin;
    b = b < lo ? lo : (b > hi ? hi : b);
  } else {
    return NULL;
  }
  if (s->end_masked) {
    e = stride > 0 ? dim : -1;
  } else if (s->known_end) {
    e = s->end < 0 ? (s->end < -dim ? lo : s->end + dim) : s->end;
    e = e < lo ? lo : (e > hi ? hi : e);
  } else {
    return NULL;
  }
  /* Written so that no step can overflow, whatever the stride. */
  if (stride > 0)
    *out = e > b ? (e - b - 1) / stride + 1 : 0;
  else
    *out = b > e ? (b - e - 1) / -(stride == INT64_MIN ? INT64_MIN + 1 : stride) + 1 : 0;
  return NULL;
}

static weft_status_t *strided_slice_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t begin_mask = weft__sh_attr_int(ctx, "begin_mask", 0);
  int64_t end_mask = weft__sh_attr_int(ctx, "end_mask", 0);
  int64_t ellipsis_mask = weft__sh_attr_int(ctx, "ellipsis_mask", 0);
  int64_t new_axis_mask = weft__sh_attr_int(ctx, "new_axis_mask", 0);
  int64_t shrink_mask = weft__sh_attr_int(ctx, "shrink_axis_mask", 0);

  int64_t *vals[3] = {NULL, NULL, NULL};
  int64_t lens[3];
  bool known[3];
  for (int k = 0; k < 3; k++) {
    known[k] = weft__sh_const_ints(ctx, k + 1, &vals[k], &lens[k], NULL);
    if (!known[k]) lens[k] = vector_length(ctx, k + 1);
  }
  weft_status_t *status = NULL;
  int64_t n = -1;
  for (int k = 0; k < 3; k++) {
    if (lens[k] < 0) continue;
    if (n >= 0 && lens[k] != n) {
      status = weft__sh_error(ctx, "Expected begin, end, and strides to be 1D equal size "
                              "tensors, but got %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                              " and %" G_GINT64_FORMAT " elements", lens[0], lens[1], lens[2]);
      goto out;
    }
    n = lens[k];
  }
  if (n > 62) {
    status = weft__sh_error(ctx, "slice spec has %" G_GINT64_FORMAT " entries, too many for "
                            "the 64-bit masks", n);
    goto out;
  }
  if (n < 0 || in.rank < 0) {
    status = weft__sh_output(ctx, 0, &kUnknownShape);
    goto out;
  }
  int64_t spec_bits = (INT64_C(1) << n) - 1;
  int64_t ellipses = ellipsis_mask & spec_bits;
  if (ellipses & (ellipses - 1)) {
    status = weft__sh_error(ctx, "Multiple ellipses in slice spec not allowed");
    goto out;
  }
  /* Without an ellipsis the spec ends with an implicit one: unmentioned dims are kept whole. */
  int64_t total = ellipses ? n : n + 1;
  weft__shape_t result = {.rank = 0};
  int full = 0;
  for (int64_t i = 0; i < total; i++) {
    bool is_ellipsis = i == n || ((ellipses >> i) & 1);
    if (is_ellipsis) {
      int remaining = 0;
      for (int64_t j = i + 1; j < n; j++)
        if (!((new_axis_mask >> j) & 1)) remaining++;
      int next = in.rank - remaining;
      for (; full < next; full++) {
        if (result.rank >= WEFT_MAX_RANK) {
          status = rank_too_big(ctx, result.rank + 1);
          goto out;
        }
        result.dims[result.rank++] = in.dims[full];
      }
      continue;
    }
    if ((new_axis_mask >> i) & 1) {
      if (result.rank >= WEFT_MAX_RANK) {
        status = rank_too_big(ctx, result.rank + 1);
        goto out;
      }
      result.dims[result.rank++] = 1;
      continue;
    }
    if (full >= in.rank) {
      char *str = weft__sh_str(&in);
      status = weft__sh_error(ctx, "Index out of range using input dim %d; input %s has only %d "
                              "dims", full, str, in.rank);
      g_free(str);
      goto out;
    }
    ss_dim_t s = {
        .known_begin = known[0], .known_end = known[1], .known_stride = known[2],
        .begin = known[0] ? vals[0][i] : 0, .end = known[1] ? vals[1][i] : 0,
        .stride = known[2] ? vals[2][i] : 1,
        .begin_masked = (begin_mask >> i) & 1, .end_masked = (end_mask >> i) & 1,
        .shrink = (shrink_mask >> i) & 1,
    };
    bool keep = false;
    int64_t dim = WEFT_DIM_UNKNOWN;
    status = ss_dense_dim(ctx, full, in.dims[full], &s, &keep, &dim);
    if (status) goto out;
    full++;
    if (keep) {
      if (result.rank >= WEFT_MAX_RANK) {
        status = rank_too_big(ctx, result.rank + 1);
        goto out;
      }
      result.dims[result.rank++] = dim;
    }
  }
  status = weft__sh_output(ctx, 0, &result);
out:
  for (int k = 0; k < 3; k++) g_free(vals[k]);
  return status;
}

static weft_status_t *tile_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t *mult = NULL, n = -1;
  if (!weft__sh_const_ints(ctx, 1, &mult, &n, NULL)) {
    int64_t len = vector_length(ctx, 1);
    int rank = in.rank >= 0 ? in.rank : (len >= 0 && len <= WEFT_MAX_RANK ? (int)len : -1);
    weft__shape_t out = weft__sh_unknown_dims(rank);
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  if ((in.rank >= 0 && n != in.rank) || n > WEFT_MAX_RANK) {
    char *str = weft__sh_str(&in);
    status = weft__sh_error(ctx, "Expected multiples argument to be a vector of length %d (the "
                            "rank of input %s) but got length %" G_GINT64_FORMAT,
                            in.rank, str, n);
    g_free(str);
    goto out;
  }
  weft__shape_t result = {.rank = (int)n};
  for (int i = 0; i < (int)n; i++) {
    if (mult[i] < 0) {
      status = weft__sh_error(ctx, "Expected multiples[%d] >= 0, but got %" G_GINT64_FORMAT, i,
                              mult[i]);
      goto out;
    }
    int64_t d = in.rank >= 0 ? in.dims[i] : WEFT_DIM_UNKNOWN;
    if (mult[i] == 0) {
      result.dims[i] = 0;
    } else if (d < 0) {
      result.dims[i] = WEFT_DIM_UNKNOWN;
    } else if (__builtin_mul_overflow(d, mult[i], &result.dims[i])) {
      status = weft__sh_error(ctx, "dimension %d times multiples[%d] overflows int64", i, i);
      goto out;
    }
  }
  status = weft__sh_output(ctx, 0, &result);
out:
  g_free(mult);
  return status;
}

static bool dtype_is_integer(weft_dtype_t t) {
  switch ((int)t % WEFT_DT_REF_OFFSET) {
    case WEFT_DT_INT8: case WEFT_DT_INT16: case WEFT_DT_INT32: case WEFT_DT_INT64:
    case WEFT_DT_UINT8: case WEFT_DT_UINT16: case WEFT_DT_UINT32: case WEFT_DT_UINT64:
      return true;
    default:
      return false;
  }
}

static weft_status_t *range_shape(weft_shape_ctx_t *ctx) {
  for (int i = 0; i < 3; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    static const char *const names[] = {"start", "limit", "delta"};
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i]));
  }
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  bool integer = dtype_is_integer(weft__graph_host()->shape_input_dtype(ctx, 0));
  double *v[3] = {NULL, NULL, NULL};
  int64_t n;
  bool all = true;
  for (int i = 0; i < 3; i++)
    all = weft__sh_const_doubles(ctx, i, &v[i], &n, NULL) && n == 1 && all;
  weft_status_t *status = NULL;
  if (all) {
    double start = v[0][0], limit = v[1][0], delta = v[2][0];
    if (delta == 0) {
      status = weft__sh_error(ctx, "Requires delta != 0");
    } else if (delta > 0 && start > limit) {
      status = weft__sh_error(ctx, "Requires start <= limit when delta > 0: %g/%g", start, limit);
    } else if (delta < 0 && start < limit) {
      status = weft__sh_error(ctx, "Requires start >= limit when delta < 0: %g/%g", start, limit);
    } else if (!isfinite(start) || !isfinite(limit) || !isfinite(delta) || fabs(start) > 4e18 ||
               fabs(limit) > 4e18 || !(fabs((limit - start) / delta) <= 4e18)) {
      /* Not finite, or past what int64 holds exactly: the size stays unknown. */
    } else if (integer) {
      int64_t s = (int64_t)start, l = (int64_t)limit, d = (int64_t)delta;
      int64_t span = l > s ? l - s : s - l, step = d > 0 ? d : -d;
      out.dims[0] = span == 0 ? 0 : (span - 1) / step + 1;
    } else {
      out.dims[0] = (int64_t)ceil(fabs((limit - start) / delta));
    }
  }
  for (int i = 0; i < 3; i++) g_free(v[i]);
  if (status) return status;
  return weft__sh_output(ctx, 0, &out);
}

/* ---------------------------------------------------------------------------------------------
 * Gathering, splitting, padding */

/* params[:axis] + indices[batch_dims:] + params[axis+1:] */
static weft_status_t *gather_common(weft_shape_ctx_t *ctx, bool has_axis) {
  weft__shape_t params, indices;
  weft__sh_input(ctx, 0, &params);
  weft__sh_input(ctx, 1, &indices);
  int64_t axis_value = 0;
  if (has_axis) {
    bool not_single;
    if (!const_scalar(ctx, 2, &axis_value, &not_single)) {
      if (not_single) return weft__sh_error(ctx, "axis must be a scalar");
      return weft__sh_output(ctx, 0, &kUnknownShape);
    }
  }
  if (params.rank < 0 || indices.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &params, 1, "params"));
  int axis;
  WEFT_RETURN_IF_ERROR(weft__sh_axis(ctx, axis_value, params.rank, "Gather axis", &axis));
  int64_t batch_dims = has_axis ? weft__sh_attr_int(ctx, "batch_dims", 0) : 0;
  if (batch_dims < 0) batch_dims += indices.rank;
  if (batch_dims < 0 || batch_dims > indices.rank || batch_dims > axis)
    return weft__sh_error(ctx, "batch_dims %" G_GINT64_FORMAT " must be in [0, %d] and not "
                          "above axis %d", batch_dims, indices.rank, axis);
  int rank = axis + (indices.rank - (int)batch_dims) + (params.rank - axis - 1);
  if (rank > WEFT_MAX_RANK) return rank_too_big(ctx, rank);
  weft__shape_t out = {.rank = 0};
  for (int d = 0; d < axis; d++) out.dims[out.rank++] = params.dims[d];
  for (int d = (int)batch_dims; d < indices.rank; d++) out.dims[out.rank++] = indices.dims[d];
  for (int d = axis + 1; d < params.rank; d++) out.dims[out.rank++] = params.dims[d];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *gather_shape(weft_shape_ctx_t *ctx) { return gather_common(ctx, false); }
static weft_status_t *gather_v2_shape(weft_shape_ctx_t *ctx) { return gather_common(ctx, true); }

static weft_status_t *split_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t value;
  weft__sh_input(ctx, 1, &value);
  int64_t num = weft__sh_attr_int(ctx, "num_split", 1);
  weft__shape_t out = value.rank >= 0 ? value : kUnknownShape;
  int64_t dim_value;
  bool not_single;
  if (!const_scalar(ctx, 0, &dim_value, &not_single)) {
    if (not_single) return weft__sh_error(ctx, "split_dim must be a scalar");
    out = weft__sh_unknown_dims(value.rank);
  } else if (value.rank >= 0) {
    int d;
    WEFT_RETURN_IF_ERROR(weft__sh_axis(ctx, dim_value, value.rank, "split_dim", &d));
    if (value.dims[d] >= 0 && num > 0) {
      if (value.dims[d] % num != 0) {
        char *str = weft__sh_str(&value);
        weft_status_t *status = weft__sh_error(
            ctx, "Number of ways to split should evenly divide the split dimension, but got "
            "split_dim %d (size = %" G_GINT64_FORMAT ") and num_split %" G_GINT64_FORMAT
            " (input shape %s)", d, value.dims[d], num, str);
        g_free(str);
        return status;
      }
      out.dims[d] = value.dims[d] / num;
    }
  }
  for (int64_t i = 0; i < num; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)i, &out));
  return NULL;
}

static weft_status_t *split_v_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t value;
  weft__sh_input(ctx, 0, &value);
  int64_t num = weft__sh_attr_int(ctx, "num_split", 1);
  int64_t dim_value;
  bool not_single;
  bool has_dim = const_scalar(ctx, 2, &dim_value, &not_single);
  if (not_single) return weft__sh_error(ctx, "split_dim must be a scalar");
  if (value.rank < 0 || !has_dim) {
    weft__shape_t out = value.rank >= 0 ? weft__sh_unknown_dims(value.rank) : kUnknownShape;
    for (int64_t i = 0; i < num; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)i, &out));
    return NULL;
  }
  int d;
  WEFT_RETURN_IF_ERROR(weft__sh_axis(ctx, dim_value, value.rank, "split_dim", &d));
  int64_t *sizes = NULL, n = 0;
  weft__shape_t out = value;
  if (!weft__sh_const_ints(ctx, 1, &sizes, &n, NULL)) {
    out.dims[d] = WEFT_DIM_UNKNOWN;
    for (int64_t i = 0; i < num; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)i, &out));
    return NULL;
  }
  weft_status_t *status = NULL;
  if (n != num) {
    status = weft__sh_error(ctx, "size_splits has %" G_GINT64_FORMAT " elements, but num_split "
                            "is %" G_GINT64_FORMAT, n, num);
    goto out;
  }
  int infer = -1;
  int64_t total = 0;
  for (int i = 0; i < (int)n; i++) {
    if (sizes[i] == -1) {
      if (infer >= 0) {
        status = weft__sh_error(ctx, "Only one dimensions can have a value of -1. Second one "
                                "found at dimension %d", i);
        goto out;
      }
      infer = i;
    } else if (sizes[i] < 0) {
      status = weft__sh_error(ctx, "size_splits[%d] is %" G_GINT64_FORMAT ", which is negative",
                              i, sizes[i]);
      goto out;
    } else {
      if (__builtin_add_overflow(total, sizes[i], &total)) {
        status = weft__sh_error(ctx, "size_splits sum overflows int64");
        goto out;
      }
    }
  }
  int64_t dim = value.dims[d];
  if (dim >= 0 && ((infer < 0 && total != dim) || (infer >= 0 && total > dim))) {
    status = weft__sh_error(ctx, "Determined shape must either match input shape along split_dim "
                            "exactly if fully specified, or be less than the size of the input "
                            "along split_dim if not fully specified. Got: %" G_GINT64_FORMAT
                            " vs. %" G_GINT64_FORMAT, total, dim);
    goto out;
  }
  for (int i = 0; i < (int)n && status == NULL; i++) {
    out.dims[d] = i == infer ? (dim >= 0 ? dim - total : WEFT_DIM_UNKNOWN) : sizes[i];
    status = weft__sh_output(ctx, i, &out);
  }
out:
  g_free(sizes);
  return status;
}

static weft_status_t *pad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, pads;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &pads);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &pads, 2, "paddings"));
  if (pads.rank == 2 && pads.dims[1] >= 0 && pads.dims[1] != 2)
    return weft__sh_error(ctx, "paddings must have shape [n, 2], not [%" G_GINT64_FORMAT ",%"
                          G_GINT64_FORMAT "]", pads.dims[0], pads.dims[1]);
  int rank = in.rank;
  if (rank < 0 && pads.rank == 2 && pads.dims[0] >= 0 && pads.dims[0] <= WEFT_MAX_RANK)
    rank = (int)pads.dims[0];
  if (rank >= 0 && pads.rank == 2 && pads.dims[0] >= 0 && pads.dims[0] != rank)
    return weft__sh_error(ctx, "paddings has %" G_GINT64_FORMAT " rows, but the input has rank "
                          "%d", pads.dims[0], rank);
  int64_t *p = NULL, n = 0;
  if (rank < 0 || !weft__sh_const_ints(ctx, 1, &p, &n, NULL)) {
    weft__shape_t out = weft__sh_unknown_dims(rank);
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  if (n != 2 * (int64_t)rank) {
    status = weft__sh_error(ctx, "paddings must have %d values, not %" G_GINT64_FORMAT,
                            2 * rank, n);
    goto out;
  }
  weft__shape_t out = {.rank = rank};
  for (int i = 0; i < rank; i++) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) {
      status = weft__sh_error(ctx, "paddings must be non-negative: %" G_GINT64_FORMAT " %"
                              G_GINT64_FORMAT, p[2 * i], p[2 * i + 1]);
      goto out;
    }
    int64_t d = in.rank >= 0 ? in.dims[i] : WEFT_DIM_UNKNOWN;
    if (d < 0) {
      out.dims[i] = WEFT_DIM_UNKNOWN;
    } else if (__builtin_add_overflow(d, p[2 * i], &out.dims[i]) ||
               __builtin_add_overflow(out.dims[i], p[2 * i + 1], &out.dims[i])) {
      status = weft__sh_error(ctx, "padded dimension %d overflows int64", i);
      goto out;
    }
  }
  status = weft__sh_output(ctx, 0, &out);
out:
  g_free(p);
  return status;
}

static weft_status_t *one_hot_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t indices;
  weft__sh_input(ctx, 0, &indices);
  int64_t axis = weft__sh_attr_int(ctx, "axis", -1);
  if (axis < -1) return weft__sh_error(ctx, "axis must be >= -1, not %" G_GINT64_FORMAT, axis);
  for (int i = 1; i < 4; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    static const char *const names[] = {"", "depth", "on_value", "off_value"};
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i]));
  }
  if (indices.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  if (indices.rank + 1 > WEFT_MAX_RANK) return rank_too_big(ctx, indices.rank + 1);
  if (axis > indices.rank)
    return weft__sh_error(ctx, "axis %" G_GINT64_FORMAT " must be in [-1, %d]", axis,
                          indices.rank);
  int64_t depth = WEFT_DIM_UNKNOWN, value;
  bool not_single;
  if (const_scalar(ctx, 1, &value, &not_single)) {
    if (value < 0) return weft__sh_error(ctx, "depth must be non-negative, got: %" G_GINT64_FORMAT,
                                         value);
    depth = value;
  }
  int at = axis < 0 ? indices.rank : (int)axis;
  weft__shape_t out = {.rank = indices.rank + 1};
  for (int d = 0, src = 0; d < out.rank; d++) out.dims[d] = d == at ? depth : indices.dims[src++];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *broadcast_to_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, target;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 1, &target));
  if (in.rank >= 0 && target.rank >= 0) {
    bool ok = in.rank <= target.rank;
    for (int i = 0; ok && i < in.rank; i++) {
      int64_t a = in.dims[in.rank - 1 - i], b = target.dims[target.rank - 1 - i];
      ok = a < 0 || b < 0 || a == 1 || a == b;
    }
    if (!ok) {
      char *a = weft__sh_str(&in), *b = weft__sh_str(&target);
      weft_status_t *status =
          weft__sh_error(ctx, "Unable to broadcast tensor of shape %s to tensor of shape %s", a, b);
      g_free(a);
      g_free(b);
      return status;
    }
  }
  return weft__sh_output(ctx, 0, &target);
}

static weft_status_t *dynamic_stitch_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx) / 2;
  int64_t max_index = -1;
  bool all_const = true;
  weft__shape_t extra = kUnknownShape; /* data dims beyond the indices' dims */
  for (int i = 0; i < n; i++) {
    weft__shape_t idx, data;
    weft__sh_input(ctx, i, &idx);
    weft__sh_input(ctx, n + i, &data);
    if (idx.rank >= 0 && data.rank >= 0) {
      if (data.rank < idx.rank)
        return weft__sh_error(ctx, "data[%d] has rank %d, below the rank %d of indices[%d]", i,
                              data.rank, idx.rank, i);
      for (int d = 0; d < idx.rank; d++) {
        if (idx.dims[d] >= 0 && data.dims[d] >= 0 && idx.dims[d] != data.dims[d]) {
          char *a = weft__sh_str(&idx), *b = weft__sh_str(&data);
          weft_status_t *status = weft__sh_error(
              ctx, "data[%d].shape %s does not start with indices[%d].shape %s", i, b, i, a);
          g_free(a);
          g_free(b);
          return status;
        }
      }
      weft__shape_t rest = {.rank = data.rank - idx.rank};
      for (int d = 0; d < rest.rank; d++) rest.dims[d] = data.dims[idx.rank + d];
      WEFT_RETURN_IF_ERROR(
          weft__sh_merge(ctx, &extra, &rest, &extra, "the trailing dims of data[0] and data[i]"));
    }
    int64_t *vals = NULL, count = 0;
    if (all_const && weft__sh_const_ints(ctx, i, &vals, &count, NULL)) {
      for (int64_t k = 0; k < count; k++)
        if (vals[k] > max_index) max_index = vals[k];
      g_free(vals);
    } else {
      all_const = false;
    }
  }
  if (extra.rank < 0 || extra.rank + 1 > WEFT_MAX_RANK)
    return weft__sh_output(ctx, 0, &kUnknownShape);
  weft__shape_t out = {.rank = extra.rank + 1};
  out.dims[0] = all_const && max_index < INT64_MAX ? max_index + 1 : WEFT_DIM_UNKNOWN;
  for (int d = 0; d < extra.rank; d++) out.dims[d + 1] = extra.dims[d];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *broadcast_gradient_args_shape(weft_shape_ctx_t *ctx) {
  for (int i = 0; i < 2; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 1, i == 0 ? "s0" : "s1"));
  }
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &out));
  return weft__sh_output(ctx, 1, &out);
}

/* ---------------------------------------------------------------------------------------------
 * The table */

#define INDEX_TYPE(name) name ": {int32, int64} = DT_INT32"

const weft_op_def_t weft__ops_array[] = {
    WEFT__OP("Const", WEFT__NO_SPECS, WEFT__SPECS("output: dtype"),
             WEFT__SPECS("value: tensor", "dtype: type"), 0, const_shape),
    WEFT__OP("Placeholder", WEFT__NO_SPECS, WEFT__SPECS("output: dtype"),
             WEFT__SPECS("dtype: type", "shape: shape = { unknown_rank: true }"), 0,
             placeholder_shape),
    WEFT__OP("PlaceholderWithDefault", WEFT__SPECS("input: dtype"), WEFT__SPECS("output: dtype"),
             WEFT__SPECS("dtype: type", "shape: shape"), 0, placeholder_with_default_shape),
    WEFT__OP("Reshape", WEFT__SPECS("tensor: T", "shape: Tshape"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("Tshape")), 0, reshape_shape),
    WEFT__OP("Transpose", WEFT__SPECS("x: T", "perm: Tperm"), WEFT__SPECS("y: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("Tperm")), 0, transpose_shape),
    WEFT__OP("ConcatV2", WEFT__SPECS("values: N * T", "axis: Tidx"), WEFT__SPECS("output: T"),
             WEFT__SPECS("N: int >= 2", "T: type", INDEX_TYPE("Tidx")), 0, concat_shape),
    WEFT__OP("Pack", WEFT__SPECS("values: N * T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("N: int >= 1", "T: type", "axis: int = 0"), 0, pack_shape),
    WEFT__OP("Unpack", WEFT__SPECS("value: T"), WEFT__SPECS("output: num * T"),
             WEFT__SPECS("num: int >= 0", "T: type", "axis: int = 0"), 0, unpack_shape),
    WEFT__OP("Fill", WEFT__SPECS("dims: index_type", "value: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("index_type")), 0, fill_shape),
    WEFT__OP("ZerosLike", WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: type"), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("OnesLike", WEFT__SPECS("x: T"), WEFT__SPECS("y: T"),
             WEFT__SPECS("T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, "
                         "uint32, int64, uint64, bool}"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("Shape", WEFT__SPECS("input: T"), WEFT__SPECS("output: out_type"),
             WEFT__SPECS("T: type", INDEX_TYPE("out_type")), 0, shape_of_shape),
    WEFT__OP("ShapeN", WEFT__SPECS("input: N * T"), WEFT__SPECS("output: N * out_type"),
             WEFT__SPECS("N: int >= 1", "T: type", INDEX_TYPE("out_type")), 0, shape_n_shape),
    WEFT__OP("Size", WEFT__SPECS("input: T"), WEFT__SPECS("output: out_type"),
             WEFT__SPECS("T: type", INDEX_TYPE("out_type")), 0, weft__shape_fn_scalar),
    WEFT__OP("Rank", WEFT__SPECS("input: T"), WEFT__SPECS("output: int32"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_scalar),
    WEFT__OP("ExpandDims", WEFT__SPECS("input: T", "dim: Tdim"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("Tdim")), 0, expand_dims_shape),
    WEFT__OP("Squeeze", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "squeeze_dims: list(int) >= 0 = []"), 0, squeeze_shape),
    WEFT__OP("Slice", WEFT__SPECS("input: T", "begin: Index", "size: Index"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: type", "Index: {int32, int64}"), 0,
             slice_shape),
    WEFT__OP("StridedSlice", WEFT__SPECS("input: T", "begin: Index", "end: Index",
                                         "strides: Index"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "Index: {int32, int64}", "begin_mask: int = 0",
                         "end_mask: int = 0", "ellipsis_mask: int = 0", "new_axis_mask: int = 0",
                         "shrink_axis_mask: int = 0"),
             0, strided_slice_shape),
    WEFT__OP("Tile", WEFT__SPECS("input: T", "multiples: Tmultiples"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("Tmultiples")), 0, tile_shape),
    WEFT__OP("Range", WEFT__SPECS("start: Tidx", "limit: Tidx", "delta: Tidx"),
             WEFT__SPECS("output: Tidx"),
             WEFT__SPECS("Tidx: {bfloat16, half, float, double, int8, int16, int32, int64, uint16, "
                         "uint32} = DT_INT32"),
             0, range_shape),
    WEFT__OP("Gather", WEFT__SPECS("params: Tparams", "indices: Tindices"),
             WEFT__SPECS("output: Tparams"),
             WEFT__SPECS("validate_indices: bool = true", "Tparams: type",
                         "Tindices: {int32, int64}"),
             0, gather_shape),
    WEFT__OP("GatherV2", WEFT__SPECS("params: Tparams", "indices: Tindices", "axis: Taxis"),
             WEFT__SPECS("output: Tparams"),
             WEFT__SPECS("batch_dims: int = 0", "Tparams: type", "Tindices: {int16, int32, int64}",
                         "Taxis: {int32, int64}"),
             0, gather_v2_shape),
    WEFT__OP("Split", WEFT__SPECS("split_dim: int32", "value: T"),
             WEFT__SPECS("output: num_split * T"), WEFT__SPECS("num_split: int >= 1", "T: type"),
             0, split_shape),
    WEFT__OP("SplitV", WEFT__SPECS("value: T", "size_splits: Tlen", "split_dim: int32"),
             WEFT__SPECS("output: num_split * T"),
             WEFT__SPECS("num_split: int >= 1", "T: type", "Tlen: {int8, int32, int64} = DT_INT64"),
             0, split_v_shape),
    WEFT__OP("Pad", WEFT__SPECS("input: T", "paddings: Tpaddings"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("Tpaddings")), 0, pad_shape),
    WEFT__OP("OneHot", WEFT__SPECS("indices: TI", "depth: int32", "on_value: T", "off_value: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("axis: int = -1", "T: type", "TI: {uint8, int8, int32, int64} = DT_INT64"),
             0, one_hot_shape),
    WEFT__OP("BroadcastTo", WEFT__SPECS("input: T", "shape: Tidx"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", INDEX_TYPE("Tidx")), 0, broadcast_to_shape),
    WEFT__OP("DynamicStitch", WEFT__SPECS("indices: N * int32", "data: N * T"),
             WEFT__SPECS("merged: T"), WEFT__SPECS("N: int >= 1", "T: type"), 0,
             dynamic_stitch_shape),
    /* The same merge; TensorFlow leaves the winner among duplicate indices unspecified. */
    WEFT__OP("ParallelDynamicStitch", WEFT__SPECS("indices: N * int32", "data: N * T"),
             WEFT__SPECS("merged: T"), WEFT__SPECS("N: int >= 1", "T: type"), 0,
             dynamic_stitch_shape),
    /* Where each input of a concat starts in the output, for ConcatV2's gradient (TensorFlow
     * 2's shape_type attr, defaulting to 1.x's int32, keeps newer graphs loading). */
    WEFT__OP("ConcatOffset", WEFT__SPECS("concat_dim: int32", "shape: N * shape_type"),
             WEFT__SPECS("offset: N * shape_type"),
             WEFT__SPECS("N: int >= 2", "shape_type: {int32, int64} = DT_INT32"), 0,
             concat_offset_shape),
    WEFT__OP("BroadcastGradientArgs", WEFT__SPECS("s0: T", "s1: T"), WEFT__SPECS("r0: T", "r1: T"),
             WEFT__SPECS(INDEX_TYPE("T")), 0, broadcast_gradient_args_shape),
    WEFT__OP("Cast", WEFT__SPECS("x: SrcT"), WEFT__SPECS("y: DstT"),
             WEFT__SPECS("SrcT: type", "DstT: type", "Truncate: bool = false"), 0,
             weft__shape_fn_unchanged),
    WEFT__OPS_END,
};
